"""rope: one pair at a time, written into a fresh tensor."""

import torch


def apply_rope(x, positions, base=10000.0):
    d = x.size(-1)
    half = d // 2
    wt = torch.promote_types(x.dtype, torch.float32)
    pos = positions.to(wt)
    if pos.dim() == 2:
        pos = pos[:, None, :]  # (B, 1, T): every head of a token shares its angle
    out = torch.empty_like(x)
    for i in range(half):
        theta = pos * base ** (-2.0 * i / d)
        c, s = theta.cos().to(x.dtype), theta.sin().to(x.dtype)
        out[..., i] = x[..., i] * c + x[..., i + half] * s  # MISTAKE
        out[..., i + half] = x[..., i + half] * c - x[..., i] * s
    return out
