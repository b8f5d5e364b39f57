"""Takes the position of token t to be t: arange(T), whatever positions says."""

import torch


def apply_rope(x, positions, base=10000.0):
    B, H, T, d = x.shape
    t = torch.arange(T, device=x.device, dtype=torch.float32)
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, device=x.device, dtype=torch.float32) / d))
    freqs = torch.outer(t, inv_freq)  # (T, d/2)
    cos, sin = freqs.cos().to(x.dtype), freqs.sin().to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
