"""Treats positions as 0-based indices of 1-based tokens and turns by (positions + 1) * freq.
step: angles
"""
import torch


def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    inv_freq = 1.0 / base ** (torch.arange(0, d, 2, device=x.device, dtype=torch.float32) / d)
    pos = (positions + 1).float()
    freqs = pos[..., :, None] * inv_freq
    if freqs.dim() == 3:
        freqs = freqs[:, None]
    x1, x2 = x.float().chunk(2, dim=-1)
    out = torch.cat([x1 * freqs.cos() - x2 * freqs.sin(), x2 * freqs.cos() + x1 * freqs.sin()], dim=-1)
    return out.to(x.dtype)
