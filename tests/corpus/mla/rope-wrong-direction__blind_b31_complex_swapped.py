import math

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return self.weight * x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)


def rope_complex(x, angles):
    # pair (x[i], x[i + d/2]) rotated as one complex number
    half = x.shape[-1] // 2
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    z = torch.complex(x[..., half:].to(work), x[..., :half].to(work))  # MISTAKE
    z = z * torch.polar(torch.ones_like(angles), angles).to(z.dtype)
    return torch.cat([z.imag, z.real], dim=-1).to(x.dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, kv_rank, d_nope, d_rope, d_v, rope_base=10000.0):
        super().__init__()
        self.H = num_heads
        self.R = kv_rank
        self.dn, self.dr, self.dv = d_nope, d_rope, d_v
        self.base = rope_base
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H, dn, dr, dv = self.H, self.dn, self.dr, self.dv
        n_past = 0 if cache is None else cache[0].shape[1]

        pos = torch.arange(n_past, n_past + T, device=x.device, dtype=torch.float64)
        inv_freq = self.base ** (-torch.arange(0, dr, 2, device=x.device, dtype=torch.float64) / dr)
        angles = pos[:, None] * inv_freq[None, :]

        q = self.W_q(x).view(B, T, H, dn + dr).permute(0, 2, 1, 3)
        q_nope = q[..., :dn]
        q_pe = rope_complex(q[..., dn:], angles)
        down = self.W_kv_a(x)
        c_kv = self.kv_norm(down[..., :self.R])
        k_pe = rope_complex(down[..., self.R:], angles)
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], 1)
            k_pe = torch.cat([cache[1], k_pe], 1)
        S = c_kv.shape[1]

        up = self.W_kv_b(c_kv).view(B, S, H, dn + dv).permute(0, 2, 1, 3)
        k_nope, v = up[..., :dn], up[..., dn:]
        scores = torch.einsum("bhtd,bhsd->bhts", q_nope, k_nope) + torch.einsum("bhtr,bsr->bhts", q_pe, k_pe)
        scores = scores / math.sqrt(dn + dr)
        i = torch.arange(T, device=x.device)[:, None] + (S - T)
        j = torch.arange(S, device=x.device)[None, :]
        scores = scores.masked_fill(j > i, float("-inf"))
        w = torch.softmax(scores, dim=-1)
        out = torch.einsum("bhts,bhsd->bthd", w, v).reshape(B, T, H * dv)
        return self.W_o(out), (c_kv, k_pe)
