"""Rotary position embedding (RoPE), half-split layout: a model answer.

Feature i and feature i + d/2 form a pair, a point in a plane; RoPE turns that point by an angle that grows
with the token's position, theta = position * base ** (-2i/d). A rotated query and a rotated key then have a
dot product that depends only on how far apart their positions are.
"""

import torch


def apply_rope(x, positions, base=10000.0):
    """x (B, H, T, d) with d even; positions int64 (T,) or (B, T). Returns the rotated x, (B, H, T, d)."""
    B, H, T, d = x.size()
    half = d // 2
    # angles in at least float32: position * frequency loses whole radians in half precision
    angle_dtype = torch.promote_types(x.dtype, torch.float32)
    # pair i turns base ** (-2i/d) radians per position: the first pairs fast, the last ones slowly
    inv_freq = base ** (-torch.arange(0, d, 2, device=x.device, dtype=angle_dtype) / d)  # (d/2,)
    theta = positions.to(angle_dtype)[..., None] * inv_freq  # (T, d/2) or (B, T, d/2)
    if theta.dim() == 3:
        theta = theta[:, None]  # (B, 1, T, d/2): a sequence's angles are shared by all its heads
    cos, sin = theta.cos().to(x.dtype), theta.sin().to(x.dtype)  # broadcast against (B, H, T, d/2)
    x1, x2 = x[..., :half], x[..., half:]  # (B, H, T, d/2) each: pair i is (x1[..., i], x2[..., i])
    # turn each pair by +theta: (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin)
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)  # (B, H, T, d)
