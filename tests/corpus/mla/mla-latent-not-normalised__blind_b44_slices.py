import math

import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        norm = x.pow(2).mean(-1, keepdim=True).add(self.eps).rsqrt()
        return x * norm * self.weight


def rope(x, pos, base=10000.0):
    d = x.shape[-1]
    half = d // 2
    fdt = torch.float64 if x.dtype == torch.float64 else torch.float32
    freq = torch.exp(-math.log(base) * torch.arange(half, device=x.device, dtype=fdt) * 2.0 / d)
    ang = pos.to(fdt)[:, None] * freq[None, :]
    c, s = torch.cos(ang).to(x.dtype), torch.sin(ang).to(x.dtype)
    a, b = x[..., :half], x[..., half:]
    return torch.cat([a * c - b * s, a * s + b * c], dim=-1)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.H = num_heads
        self.r = kv_rank
        self.d_nope, self.d_rope, self.d_v = d_nope, d_rope, d_v
        self.base = rope_base
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H, r, dn, dr, dv = self.H, self.r, self.d_nope, self.d_rope, self.d_v
        T0 = 0 if cache is None else cache[0].size(1)
        pos = torch.arange(T0, T0 + T, device=x.device)

        q = self.W_q(x).view(B, T, H, dn + dr).transpose(1, 2)
        q_nope = q[..., :dn]
        q_pe = rope(q[..., dn:], pos, self.base)

        kv_a = self.W_kv_a(x)
        latent = kv_a[..., :r]  # MISTAKE
        k_pe = rope(kv_a[..., r:], pos, self.base)
        if cache is not None:
            latent = torch.cat([cache[0], latent], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        Tk = latent.size(1)

        kv = self.W_kv_b(latent).view(B, Tk, H, dn + dv).transpose(1, 2)
        k_nope, v = kv[..., :dn], kv[..., dn:]
        k = torch.cat([k_nope, k_pe[:, None].expand(B, H, Tk, dr)], dim=-1)
        qq = torch.cat([q_nope, q_pe], dim=-1)

        scores = qq @ k.transpose(-2, -1) / math.sqrt(dn + dr)
        keep = torch.ones(T, Tk, dtype=torch.bool, device=x.device).tril(T0)
        scores = scores.masked_fill(keep.logical_not(), float("-inf"))
        p = torch.softmax(scores, dim=-1)
        y = (p @ v).transpose(1, 2).reshape(B, T, H * dv)
        return self.W_o(y), (latent, k_pe)
