"""Calls positions.unsqueeze_(-1) to broadcast: right numbers, but the caller's positions change shape."""

import torch


def apply_rope(x, positions, base=10000.0):
    d = x.size(-1)
    positions.unsqueeze_(-1)  # (T, 1) or (B, T, 1)
    theta = positions.double() * base ** (-torch.arange(0, d, 2, device=x.device).double() / d)
    if theta.dim() == 3:
        theta = theta.unsqueeze(1)
    c, s = theta.cos().to(x.dtype), theta.sin().to(x.dtype)
    a, b = x.chunk(2, -1)
    return torch.cat([a * c - b * s, b * c + a * s], -1)
