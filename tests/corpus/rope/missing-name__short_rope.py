"""Calls the function rope."""

import torch


def rope(x, positions, base=10000.0):
    d = x.size(-1)
    theta = positions.double()[..., None] * base ** (-torch.arange(0, d, 2, device=x.device).double() / d)
    if theta.dim() == 3:
        theta = theta[:, None]
    c, s = theta.cos().to(x.dtype), theta.sin().to(x.dtype)
    a, b = x.chunk(2, -1)
    return torch.cat([a * c - b * s, b * c + a * s], -1)
