"""RMSNorm centres x first."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        x = x - x.mean(-1, keepdim=True)
        rms = torch.sqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return x / rms * self.weight


def rope(x, pos, base):
    half = x.shape[-1] // 2
    freqs = 1.0 / base ** (torch.arange(half, device=x.device, dtype=x.dtype) * 2 / x.shape[-1])
    ang = pos.to(x.dtype)[:, None] * freqs
    cos, sin = ang.cos(), ang.sin()
    a, b = x[..., :half], x[..., half:]
    return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, kv_rank, d_nope, d_rope, d_v, rope_base=10000.0):
        super().__init__()
        self.h, self.r, self.dn, self.dr, self.dv = num_heads, kv_rank, d_nope, d_rope, d_v
        self.base = rope_base
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H, dn, dr, dv = self.h, self.dn, self.dr, self.dv
        start = 0 if cache is None else cache[0].shape[1]
        pos = torch.arange(start, start + T, device=x.device)
        q = self.W_q(x).view(B, T, H, dn + dr)
        q_nope, q_pe = q[..., :dn], q[..., dn:]
        q_pe = rope(q_pe.transpose(1, 2), pos, self.base).transpose(1, 2)
        kv = self.W_kv_a(x)
        c_kv, k_pe = kv[..., :self.r], kv[..., self.r:]
        c_kv = self.kv_norm(c_kv)
        k_pe = rope(k_pe, pos, self.base)
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        S = c_kv.shape[1]
        kvb = self.W_kv_b(c_kv).view(B, S, H, dn + dv)
        k_nope, v = kvb[..., :dn], kvb[..., dn:]
        s = torch.einsum("bthd,bshd->bhts", q_nope, k_nope)
        s = s + torch.einsum("bthd,bsd->bhts", q_pe, k_pe)
        s = s * (dn + dr) ** -0.5
        keep = torch.ones(T, S, dtype=torch.bool, device=x.device).tril(start)
        s = s.masked_fill(~keep, float("-inf"))
        p = F.softmax(s, dim=-1)
        o = torch.einsum("bhts,bshd->bthd", p, v).reshape(B, T, H * dv)
        out = self.W_o(o)
        return out, (c_kv, k_pe)
