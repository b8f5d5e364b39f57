"""Names the base `theta` (as some model configs do): apply_rope(x, positions, base=...) cannot be called."""

import torch


def apply_rope(x, positions, theta=10000.0):
    d = x.shape[-1]
    inv_freq = theta ** (-torch.arange(0, d, 2, device=x.device, dtype=torch.float32) / d)
    ang = positions.float()[..., None] * inv_freq
    if ang.dim() == 3:
        ang = ang[:, None]
    x1, x2 = x.chunk(2, -1)
    c, s = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], -1)
