"""Writes the usual 10000 into the frequencies and never uses the base argument."""

import torch


def apply_rope(x, positions, base=10000.0):
    d = x.size(-1)
    inv_freq = 1.0 / (10000 ** (torch.arange(0, d, 2, device=x.device).float() / d))
    ang = positions.float()[..., None] * inv_freq
    if positions.ndim == 2:
        ang = ang[:, None, :, :]
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
