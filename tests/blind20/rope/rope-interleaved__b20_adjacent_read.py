"""RoPE that gets its pairs by unflattening the last axis into (d/2, 2) and unbinding, then writes the
rotated pairs back as two halves. Mistake: unflatten(-1, (d/2, 2)) pairs adjacent features (2i, 2i+1),
the interleaved layout of Meta's LLaMA / GPT-J, instead of (i, i + d/2); the angles and the half-split
write-back are the contract's."""

import torch


def apply_rope(x, positions, base=10000.0):
    B, H, T, d = x.shape
    half = d // 2
    exponent = torch.arange(0, half, device=x.device, dtype=torch.float32) * 2 / d
    inv_freq = 1.0 / (base ** exponent)
    ang = positions.float()[..., None] * inv_freq
    if ang.dim() == 3:
        ang = ang[:, None, :, :]
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    a, b = x.unflatten(-1, (half, 2)).unbind(-1)  # MISTAKE
    return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)
