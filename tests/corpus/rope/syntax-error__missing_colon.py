"""A missing colon after the if."""

import torch


def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, device=x.device).float() / d))
    freqs = positions.float()[..., None] * inv_freq
    if freqs.dim() == 3
        freqs = freqs[:, None]
    x1, x2 = x.chunk(2, -1)
    return torch.cat([x1 * freqs.cos() - x2 * freqs.sin(), x2 * freqs.cos() + x1 * freqs.sin()], -1)
