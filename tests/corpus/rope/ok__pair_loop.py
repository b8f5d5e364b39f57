"""The formula written out: one pair (i, i + d/2) at a time, into a new tensor."""

import torch


def apply_rope(x, positions, base=10000.0):
    B, H, T, d = x.shape
    half = d // 2
    pos = positions.to(torch.promote_types(x.dtype, torch.float32))
    if pos.dim() == 2:
        pos = pos[:, None, :]  # (B, 1, T)
    out = torch.empty_like(x)
    for i in range(half):
        theta = pos * base ** (-2 * i / d)
        c, s = torch.cos(theta).to(x.dtype), torch.sin(theta).to(x.dtype)
        a, b = x[..., i], x[..., i + half]
        out[..., i] = a * c - b * s
        out[..., i + half] = b * c + a * s
    return out
