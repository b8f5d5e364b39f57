"""rope: cos/sin tables built per call, positions reshaped to broadcast."""

import torch


def apply_rope(x, positions, base=10000.0):
    B, H, T, d = x.shape
    half = d // 2
    wt = torch.promote_types(x.dtype, torch.float32)
    inv_freq = base ** (-torch.arange(half, device=x.device, dtype=wt) / d)  # MISTAKE
    pos = positions.to(wt).reshape(-1, 1, T, 1)  # (1 or B, 1, T, 1)
    ang = pos * inv_freq
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    left, right = x[..., :half], x[..., half:]
    return torch.cat([left * cos - right * sin, right * cos + left * sin], dim=-1)
