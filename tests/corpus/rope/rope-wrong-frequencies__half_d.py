"""Divides the even exponents by the number of pairs (d/2) instead of d: base ** (-2i/(d/2))."""

import torch


def apply_rope(x, positions, base=10000.0):
    B, H, T, d = x.shape
    n_pairs = d // 2
    inv_freq = 1.0 / base ** (torch.arange(0, d, 2, device=x.device).double() / n_pairs)
    theta = positions.double().unsqueeze(-1) * inv_freq
    if theta.dim() == 3:
        theta = theta.unsqueeze(1)
    c, s = theta.cos().to(x.dtype), theta.sin().to(x.dtype)
    a, b = x[..., :n_pairs], x[..., n_pairs:]
    return torch.cat([a * c - b * s, b * c + a * s], dim=-1)
