"""Turns each pair as unit vector times length: dividing by the length gives NaN for a zero vector (a padded
token), where the rotation should simply give zero."""

import torch


def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, device=x.device).float() / d))
    theta = positions.float()[..., None] * inv_freq
    if theta.dim() == 3:
        theta = theta[:, None]
    cos, sin = theta.cos().to(x.dtype), theta.sin().to(x.dtype)
    x1, x2 = x.chunk(2, dim=-1)
    r = torch.sqrt(x1 ** 2 + x2 ** 2)
    u1, u2 = x1 / r, x2 / r  # the direction of each pair
    return torch.cat([r * (u1 * cos - u2 * sin), r * (u2 * cos + u1 * sin)], dim=-1)
