"""The two formulas with their signs swapped: x1 cos + x2 sin and x2 cos - x1 sin, a rotation by -theta."""

import torch


def apply_rope(x, positions, base=10000.0):
    d = x.size(-1)
    half = d // 2
    i = torch.arange(half, device=x.device, dtype=torch.float64)
    theta = positions.double()[..., None] * torch.pow(base, -2 * i / d)
    if positions.dim() == 2:
        theta = theta[:, None]
    cos, sin = torch.cos(theta).to(x.dtype), torch.sin(theta).to(x.dtype)
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos + x2 * sin, x2 * cos - x1 * sin], dim=-1)
