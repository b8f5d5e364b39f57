"""Exercise rope: rotary position embedding."""

import torch


def rotate_every_two(x):
    x1 = x[..., ::2]
    x2 = x[..., 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


def apply_rope(x, positions, base=10000.0):
    d = x.size(-1)
    fdt = torch.promote_types(x.dtype, torch.float32)
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, dtype=fdt, device=x.device) / d))
    freqs = positions.to(fdt)[..., None] * inv_freq  # (T, d/2) or (B, T, d/2)
    if freqs.dim() == 3:
        freqs = freqs[:, None]
    emb = freqs.repeat_interleave(2, dim=-1)  # MISTAKE
    cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
    return x * cos + rotate_every_two(x) * sin
