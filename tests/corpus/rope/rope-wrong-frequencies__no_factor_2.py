"""Exponents from arange(d/2) / d: pair i turns at base ** (-i/d), the factor 2 is missing."""

import torch


def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    inv_freq = base ** (-torch.arange(d // 2, device=x.device, dtype=torch.float32) / d)
    freqs = positions.float()[..., None] * inv_freq
    if freqs.dim() == 3:
        freqs = freqs[:, None]
    emb = torch.cat([freqs, freqs], dim=-1)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return x * emb.cos().to(x.dtype) + torch.cat([-x2, x1], dim=-1) * emb.sin().to(x.dtype)
