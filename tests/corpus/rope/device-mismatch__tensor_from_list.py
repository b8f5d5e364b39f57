"""Builds the frequencies with torch.tensor([...]) from a Python list, no device=: a CPU tensor."""

import torch


def apply_rope(x, positions, base=10000.0):
    d = x.size(-1)
    inv_freq = torch.tensor([base ** (-2 * i / d) for i in range(d // 2)], dtype=torch.float64)
    theta = positions.double()[..., None] * inv_freq
    if theta.dim() == 3:
        theta = theta[:, None]
    c, s = theta.cos().to(x.dtype), theta.sin().to(x.dtype)
    a, b = x[..., : d // 2], x[..., d // 2:]
    return torch.cat([a * c - b * s, b * c + a * s], -1)
