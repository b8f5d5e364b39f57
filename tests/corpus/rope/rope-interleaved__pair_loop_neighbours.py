"""Loops over the pairs, but takes each pair as two neighbours x[2i], x[2i+1]."""

import torch


def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    pos = positions.double()
    if pos.dim() == 2:
        pos = pos.unsqueeze(1)
    out = torch.zeros_like(x)
    for i in range(d // 2):
        theta = pos * (base ** (-2 * i / d))
        cos, sin = theta.cos().to(x.dtype), theta.sin().to(x.dtype)
        even, odd = x[..., 2 * i], x[..., 2 * i + 1]
        out[..., 2 * i] = even * cos - odd * sin
        out[..., 2 * i + 1] = odd * cos + even * sin
    return out
