import math

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        denom = torch.sqrt(torch.mean(x * x, dim=-1, keepdim=True) + self.eps)
        return self.weight * x / denom


def rope(x, pos, base):
    # x (..., T, d); rotate (x[k], x[k + d/2]) by pos * base^(-2k/d)
    d = x.shape[-1]
    half = d // 2
    k = torch.arange(half, device=x.device, dtype=x.dtype)
    inv_freq = base ** (-k / d)  # MISTAKE
    theta = pos.to(x.dtype)[:, None] * inv_freq[None, :]
    c, s = torch.cos(theta), torch.sin(theta)
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, kv_rank, d_nope, d_rope, d_v, rope_base=10000.0):
        super().__init__()
        self.num_heads = num_heads
        self.kv_rank = kv_rank
        self.d_nope, self.d_rope, self.d_v = d_nope, d_rope, d_v
        self.rope_base = rope_base
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        past = cache[0].shape[1] if cache is not None else 0
        pos = torch.arange(past, past + T, device=x.device)
        dqk = self.d_nope + self.d_rope
        dkv = self.d_nope + self.d_v

        q = self.W_q(x)
        comp = self.W_kv_a(x)
        c_kv = self.kv_norm(comp[..., :self.kv_rank])
        k_pe = rope(comp[..., self.kv_rank:], pos, self.rope_base)
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        S = c_kv.shape[1]
        kv = self.W_kv_b(c_kv)

        qi = torch.arange(T, device=x.device)[:, None] + past
        kj = torch.arange(S, device=x.device)[None, :]
        blocked = kj > qi

        head_out = []
        for h in range(self.num_heads):
            q_h = q[:, :, h * dqk:(h + 1) * dqk]
            q_nope, q_pe = q_h[..., :self.d_nope], rope(q_h[..., self.d_nope:], pos, self.rope_base)
            kv_h = kv[:, :, h * dkv:(h + 1) * dkv]
            k_nope, v_h = kv_h[..., :self.d_nope], kv_h[..., self.d_nope:]
            att = (torch.einsum("btd,bsd->bts", q_nope, k_nope)
                   + torch.einsum("btr,bsr->bts", q_pe, k_pe)) / math.sqrt(dqk)
            att = att.masked_fill(blocked, float("-inf"))
            att = torch.softmax(att, dim=-1)
            head_out.append(torch.einsum("bts,bsd->btd", att, v_h))
        return self.W_o(torch.cat(head_out, dim=-1)), (c_kv, k_pe)
