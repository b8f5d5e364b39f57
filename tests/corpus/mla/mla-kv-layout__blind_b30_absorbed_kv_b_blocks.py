import math

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def apply_rope(x, positions, base=10000.0):
    d = x.size(-1)
    half = d // 2
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    inv = base ** (-torch.arange(0, d, 2, dtype=work, device=x.device) / d)
    theta = positions.to(work).unsqueeze(-1) * inv
    cos, sin = theta.cos().to(x.dtype), theta.sin().to(x.dtype)
    a, b = x[..., :half], x[..., half:]
    return torch.cat((a * cos - b * sin, b * cos + a * sin), dim=-1)


class MultiHeadLatentAttention(nn.Module):
    """Absorbed form: W_kv_b folded into the query and into the output."""

    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.H = num_heads
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
        H, r, dn, dr, dv = self.H, self.kv_rank, self.d_nope, self.d_rope, self.d_v
        past = 0 if cache is None else cache[0].shape[1]
        pos = torch.arange(past, past + T, device=x.device)

        q = self.W_q(x).view(B, T, H, dn + dr).transpose(1, 2)          # B H T dqk
        q_nope, q_pe = q[..., :dn], q[..., dn:]
        q_pe = apply_rope(q_pe, pos, self.rope_base)

        kv_a = self.W_kv_a(x)
        c_kv = self.kv_norm(kv_a[..., :r])
        k_pe = apply_rope(kv_a[..., r:], pos, self.rope_base)
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        S = c_kv.shape[1]

        w = self.W_kv_b.weight                                              # (H*(dn+dv), r)
        w_uk, w_uv = w.split([H * dn, H * dv], dim=0)  # MISTAKE
        w_uk = w_uk.view(H, dn, r)
        w_uv = w_uv.view(H, dv, r)

        q_lat = torch.einsum("bhtd,hdr->bhtr", q_nope, w_uk)               # B H T r
        scores = q_lat @ c_kv.unsqueeze(1).transpose(-1, -2)
        scores = scores + q_pe @ k_pe.unsqueeze(1).transpose(-1, -2)
        scores = scores / math.sqrt(dn + dr)

        keep = torch.ones(T, S, dtype=torch.bool, device=x.device).tril(S - T)
        scores = scores.masked_fill(~keep, float("-inf"))
        p = torch.softmax(scores, dim=-1)

        o_lat = p @ c_kv.unsqueeze(1)                                       # B H T r
        o = torch.einsum("bhtr,hdr->bthd", o_lat, w_uv).reshape(B, T, H * dv)
        return self.W_o(o), (c_kv, k_pe)
