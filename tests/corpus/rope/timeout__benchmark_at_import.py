"""A correct function, but a timing loop left at module level (no __main__ guard) runs forever on import."""

import time

import torch


def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, device=x.device).float() / d))
    freqs = positions.float()[..., None] * inv_freq
    if freqs.dim() == 3:
        freqs = freqs[:, None]
    c, s = freqs.cos().to(x.dtype), freqs.sin().to(x.dtype)
    x1, x2 = x.chunk(2, -1)
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], -1)


_x, _pos = torch.randn(1, 8, 128, 64), torch.arange(128)
_start, _n = time.perf_counter(), 0
while time.perf_counter() - _start < 1e9:  # "long enough to average"
    apply_rope(_x, _pos)
    _n += 1
