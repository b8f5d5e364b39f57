"""base has no default: apply_rope(x, positions) cannot be called."""

import torch


def apply_rope(x, positions, base):
    d = x.shape[-1]
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, device=x.device).float() / d))
    freqs = positions.float()[..., None] * inv_freq
    if freqs.dim() == 3:
        freqs = freqs[:, None]
    x1, x2 = x.chunk(2, -1)
    c, s = freqs.cos().to(x.dtype), freqs.sin().to(x.dtype)
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], -1)
