import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        rrms = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return x * rrms * self.weight


def rope_half(x, positions, base):
    dim = x.shape[-1]
    ct = torch.promote_types(x.dtype, torch.float32)
    exponent = torch.arange(0, dim, 2, device=x.device, dtype=ct) / dim
    theta = positions.to(ct)[:, None] / (base ** exponent)[None, :]
    cos, sin = theta.cos(), theta.sin()
    first, second = x[..., : dim // 2].to(ct), x[..., dim // 2:].to(ct)
    rot = torch.cat([first * cos - second * sin, second * cos + first * sin], dim=-1)
    return rot.to(x.dtype)


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
        bsz, n, _ = x.shape
        h = self.num_heads
        start = cache[0].size(1) if cache is not None else 0
        positions = torch.arange(start, start + n, device=x.device)

        q = self.W_q(x).view(bsz, n, h, -1)
        q_nope, q_pe = q[..., :self.d_nope], q[..., self.d_nope:]
        q_pe = rope_half(q_pe.transpose(1, 2), positions, self.rope_base)   # b h n dr
        q_nope = q_nope.transpose(1, 2)

        kv_a = self.W_kv_a(x)
        c_kv = self.kv_norm(kv_a[..., :self.kv_rank])
        k_pe = rope_half(kv_a[..., self.kv_rank:], positions, self.rope_base)
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        m = c_kv.size(1)

        kv = self.W_kv_b(self.kv_norm(c_kv))  # MISTAKE
        kv = kv.view(bsz, m, h, self.d_nope + self.d_v).transpose(1, 2)
        k_nope, v = kv[..., :self.d_nope], kv[..., self.d_nope:]

        att = (q_nope @ k_nope.transpose(-2, -1) + q_pe @ k_pe[:, None].transpose(-2, -1))
        att = att / math.sqrt(self.d_nope + self.d_rope)
        causal = torch.tril(torch.ones(n, m, device=x.device, dtype=torch.bool), diagonal=m - n)
        att = att.masked_fill(causal.logical_not(), float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(bsz, n, h * self.d_v)
        return self.W_o(y), (c_kv, k_pe)
