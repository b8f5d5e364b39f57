"""Reads x.data to split the halves: the result is cut off from x's graph."""

import torch


def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    freqs = torch.pow(base, -torch.arange(0, d, 2, device=x.device, dtype=torch.float32) / d)
    theta = positions.float().unsqueeze(-1) * freqs
    if theta.ndim == 3:
        theta = theta.unsqueeze(1)
    x1, x2 = x.data[..., : d // 2], x.data[..., d // 2:]
    c, s = theta.cos().to(x.dtype), theta.sin().to(x.dtype)
    return torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), dim=-1)
