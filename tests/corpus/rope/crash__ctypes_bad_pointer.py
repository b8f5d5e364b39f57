"""Peeks at x's first value through a ctypes pointer built from x.stride(-1) (meant x.data_ptr()): it reads
address 1, a segfault."""

import ctypes

import torch


def apply_rope(x, positions, base=10000.0):
    first = ctypes.cast(x.stride(-1), ctypes.POINTER(ctypes.c_double))[0]  # meant x.data_ptr()
    d = x.size(-1)
    theta = positions.double()[..., None] * base ** (-torch.arange(0, d, 2, device=x.device).double() / d)
    if theta.dim() == 3:
        theta = theta[:, None]
    a, b = x.chunk(2, -1)
    c, s = theta.cos().to(x.dtype), theta.sin().to(x.dtype)
    return torch.cat([a * c - b * s, b * c + a * s], -1)
