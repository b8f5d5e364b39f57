"""Sets torch's default dtype to float64 at import "for precise angles": a global change to torch."""

import torch

torch.set_default_dtype(torch.float64)


def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, device=x.device, dtype=torch.float64) / d))
    theta = positions.double()[..., None] * inv_freq
    if theta.dim() == 3:
        theta = theta[:, None]
    c, s = theta.cos().to(x.dtype), theta.sin().to(x.dtype)
    x1, x2 = x.chunk(2, -1)
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], -1)
