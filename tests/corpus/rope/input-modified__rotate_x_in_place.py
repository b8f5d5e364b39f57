"""Writes the rotated halves back into x (after copying them) and returns x: right numbers, but the
caller's x is changed."""

import torch


def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    h = d // 2
    inv_freq = base ** (-torch.arange(0, d, 2, device=x.device, dtype=torch.float32) / d)
    theta = positions.float()[..., None] * inv_freq
    if theta.dim() == 3:
        theta = theta[:, None]
    cos, sin = theta.cos().to(x.dtype), theta.sin().to(x.dtype)
    x1, x2 = x[..., :h].clone(), x[..., h:].clone()
    x[..., :h] = x1 * cos - x2 * sin
    x[..., h:] = x2 * cos + x1 * sin
    return x
