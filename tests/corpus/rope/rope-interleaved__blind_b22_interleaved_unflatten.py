"""rope: pairs taken with unflatten, rotated, stacked back."""

import torch


def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    ft = torch.promote_types(x.dtype, torch.float32)
    freqs = base ** (-torch.arange(0, d, 2, device=x.device, dtype=ft) / d)  # (d/2,)
    ang = positions.to(ft).unsqueeze(-1) * freqs  # (T, d/2) or (B, T, d/2)
    if ang.dim() == 3:
        ang = ang.unsqueeze(1)
    cos, sin = ang.cos(), ang.sin()
    pairs = x.to(ft).unflatten(-1, (d // 2, 2))  # MISTAKE
    a, b = pairs[..., 0], pairs[..., 1]
    rot = torch.stack((a * cos - b * sin, b * cos + a * sin), dim=-1).flatten(-2)
    return rot.to(x.dtype)
