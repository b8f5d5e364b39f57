"""Rotates the pairs one by one in a while loop and forgets to move to the next pair: never returns."""

import torch


def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    half = d // 2
    pos = positions.double()
    if pos.dim() == 2:
        pos = pos[:, None]
    out = torch.empty_like(x)
    i = 0
    while i < half:
        theta = pos * base ** (-2 * i / d)
        c, s = theta.cos().to(x.dtype), theta.sin().to(x.dtype)
        out[..., i] = x[..., i] * c - x[..., i + half] * s
        out[..., i + half] = x[..., i + half] * c + x[..., i] * s
        # TODO i += 1
    return out
