"""An unclosed bracket in the torch.cat call."""

import torch


def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    theta = positions.float()[..., None] * base ** (-torch.arange(0, d, 2, device=x.device).float() / d)
    if theta.dim() == 3:
        theta = theta.unsqueeze(1)
    c, s = theta.cos().to(x.dtype), theta.sin().to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s, dim=-1)
