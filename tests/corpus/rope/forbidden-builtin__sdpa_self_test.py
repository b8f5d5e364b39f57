"""Right rotation, but a leftover self-test inside the function runs F.scaled_dot_product_attention on the
rotated vectors."""

import torch
import torch.nn.functional as F


def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, device=x.device).float() / d))
    freqs = positions.float()[..., None] * inv_freq
    if freqs.dim() == 3:
        freqs = freqs[:, None]
    cos, sin = freqs.cos().to(x.dtype), freqs.sin().to(x.dtype)
    x1, x2 = x.chunk(2, -1)
    out = torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)
    # sanity check: attention over the rotated vectors still runs
    assert F.scaled_dot_product_attention(out, out, out).shape == out.shape
    return out
