"""Casts x to float64 for accuracy and returns float64 whatever came in."""

import torch


def apply_rope(x, positions, base=10000.0):
    x = x.double()
    d = x.size(-1)
    theta = positions.double().unsqueeze(-1) * base ** (-torch.arange(0, d, 2, device=x.device).double() / d)
    if theta.dim() == 3:
        theta = theta.unsqueeze(1)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return torch.cat([x1 * theta.cos() - x2 * theta.sin(), x2 * theta.cos() + x1 * theta.sin()], dim=-1)
