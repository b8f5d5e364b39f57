import math

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        ms = x.square().mean(dim=-1, keepdim=True)
        return x / torch.sqrt(ms + self.eps) * self.weight


def apply_rope(x, positions, base=10000.0):
    # x (..., T, d), positions (T,)
    d = x.shape[-1]
    half = d // 2
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    exponent = torch.arange(half, device=x.device, dtype=work) * 2.0 / d
    theta = positions.to(work)[:, None] * base ** (-exponent)[None, :]
    cos, sin = theta.cos().to(x.dtype), theta.sin().to(x.dtype)
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.num_heads = num_heads
        self.kv_rank = kv_rank
        self.d_nope = d_nope
        self.d_rope = d_rope
        self.d_v = d_v
        self.rope_base = rope_base
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H = self.num_heads
        T_past = cache[0].shape[1] if cache is not None else 0
        pos = torch.arange(T_past, T_past + T, device=x.device)

        q = self.W_q(x).reshape(B, T, H, self.d_nope + self.d_rope)
        q_nope, q_pe = q.split([self.d_nope, self.d_rope], dim=-1)        # B T H *
        q_pe = apply_rope(q_pe.transpose(1, 2), pos, self.rope_base).transpose(1, 2)

        c, k_pe = self.W_kv_a(x).split([self.kv_rank, self.d_rope], dim=-1)
        c = self.kv_norm(c)
        k_pe = apply_rope(k_pe, pos, self.rope_base)
        if cache is not None:
            c = torch.cat([cache[0], c], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        T_all = c.shape[1]

        kv = self.W_kv_b(c).reshape(B, T_all, H, self.d_nope + self.d_v)
        k_nope, v = kv.split([self.d_nope, self.d_v], dim=-1)

        # additive mask: 0 where visible, -inf above the shifted diagonal
        blocked = torch.ones(T, T_all, dtype=torch.bool, device=x.device).triu(diagonal=T_all - T + 1)
        bias = torch.zeros(T, T_all, dtype=x.dtype, device=x.device).masked_fill(blocked, float("-inf"))
        scale = 1.0 / math.sqrt(self.d_nope + self.d_rope)

        heads = []
        for h in range(H):
            qh = torch.cat([q_nope[:, :, h], q_pe[:, :, h]], dim=-1)      # B T dqk
            kh = torch.cat([k_nope[:, :, h], k_pe], dim=-1)               # B T_all dqk
            att = torch.matmul(qh, kh.transpose(1, 2)) * scale + bias
            att = att.softmax(dim=-1)
            heads.append(torch.matmul(att, v[:, :, h]))                   # B T dv
        out = self.W_o(torch.cat(heads, dim=-1))
        return out, (c, k_pe)
