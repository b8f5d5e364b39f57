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
        if x.dtype in (torch.float16, torch.bfloat16):
            xf = x.float()
            return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_apply(x, cos, sin):
    n = x.shape[-1] // 2
    return torch.cat([x[..., :n] * cos - x[..., n:] * sin, x[..., n:] * cos + x[..., :n] * sin], dim=-1)


class MultiHeadLatentAttention(nn.Module):
    """Absorbed MLA with flattened (batch * heads) batched matmuls."""

    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.h = num_heads
        self.c = kv_rank
        self.dn, self.dr, self.dv = d_nope, d_rope, d_v
        self.base = rope_base
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)
        self.scale = 1.0 / math.sqrt(d_nope + d_rope)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H, C = self.h, self.c
        T0 = 0 if cache is None else cache[0].shape[1]

        f = torch.float64 if x.dtype == torch.float64 else torch.float32
        pos = torch.arange(T0, T0 + T, device=x.device, dtype=f)
        ang = pos[:, None] * self.base ** (-torch.arange(0, self.dr, 2, device=x.device, dtype=f) / self.dr)
        cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)

        q = self.W_q(x).view(B, T, H, self.dn + self.dr).transpose(1, 2)
        q_nope, q_pe = q[..., :self.dn], rope_apply(q[..., self.dn:], cos, sin)
        z = self.W_kv_a(x)
        c_kv, k_pe = self.kv_norm(z[..., :C]), rope_apply(z[..., C:], cos, sin)
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        S = c_kv.shape[1]

        w = self.W_kv_b.weight.view(H, self.dn + self.dv, C)
        w_uk, w_uv = w[:, :self.dn, :], w[:, self.dn:, :]
        q_lat = torch.matmul(q_nope, w_uk).reshape(B * H, T, C)
        c_t = c_kv.unsqueeze(1).expand(B, H, S, C).reshape(B * H, S, C).transpose(1, 2)
        pe_t = k_pe.unsqueeze(1).expand(B, H, S, self.dr).reshape(B * H, S, self.dr).transpose(1, 2)
        pe_scores = torch.bmm(q_pe.reshape(B * H, T, self.dr), pe_t)
        scores = torch.baddbmm(pe_scores, q_lat, c_t)  # MISTAKE

        future = torch.triu(torch.ones(T, S, dtype=torch.bool, device=x.device), diagonal=S - T + 1)
        scores = scores.masked_fill(future, float("-inf"))
        p = F.softmax(scores, dim=-1)

        o_lat = torch.bmm(p, c_kv.unsqueeze(1).expand(B, H, S, C).reshape(B * H, S, C)).view(B, H, T, C)
        o = torch.matmul(o_lat, w_uv.transpose(-1, -2))
        return self.W_o(o.transpose(1, 2).reshape(B, T, H * self.dv)), (c_kv, k_pe)
