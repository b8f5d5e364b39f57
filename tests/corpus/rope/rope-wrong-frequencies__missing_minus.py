"""inv_freq = base ** (2i/d): the minus sign of the exponent is missing, so later pairs spin faster."""

import torch


def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    inv_freq = base ** (torch.arange(0, d, 2, device=x.device, dtype=torch.float64) / d)
    theta = positions.to(torch.float64)[..., None] * inv_freq
    if theta.dim() == 3:
        theta = theta[:, None]
    cos = torch.cat([theta.cos(), theta.cos()], dim=-1).to(x.dtype)
    sin = torch.cat([theta.sin(), theta.sin()], dim=-1).to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return x * cos + torch.cat([-x2, x1], dim=-1) * sin
