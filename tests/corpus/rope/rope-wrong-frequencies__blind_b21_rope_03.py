"""Exercise rope: rotary position embedding."""

import torch


class _Rotary:
    def __init__(self, d, base, device, dtype):
        half = d // 2
        idx = torch.arange(0, d, 2, device=device, dtype=dtype)  # 0, 2, 4, ..., d-2
        self.inv_freq = 1.0 / base ** (idx / half)  # MISTAKE

    def angles(self, positions, dtype):
        return torch.outer(positions.reshape(-1).to(dtype), self.inv_freq).reshape(*positions.shape, -1)


def apply_rope(x, positions, base=10000.0):
    B, H, T, d = x.shape
    wide = torch.promote_types(x.dtype, torch.float32)
    theta = _Rotary(d, base, x.device, wide).angles(positions, wide)  # (T, d/2) or (B, T, d/2)
    if theta.dim() == 3:
        theta = theta.unsqueeze(1)
    cos = torch.cat([theta.cos(), theta.cos()], dim=-1).to(x.dtype)
    sin = torch.cat([theta.sin(), theta.sin()], dim=-1).to(x.dtype)
    x1, x2 = x.chunk(2, dim=-1)
    rotated = torch.cat([-x2, x1], dim=-1)
    return x * cos + rotated * sin
