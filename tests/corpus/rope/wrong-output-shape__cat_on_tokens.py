"""Concatenates the two rotated halves along the token axis (dim=-2) instead of the features."""

import torch


def apply_rope(x, positions, base=10000.0):
    d = x.size(-1)
    theta = positions.to(torch.float32).unsqueeze(-1) * base ** (
        -torch.arange(0, d, 2, device=x.device, dtype=torch.float32) / d)
    if theta.dim() == 3:
        theta = theta.unsqueeze(1)
    cos, sin = theta.cos().to(x.dtype), theta.sin().to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-2)
