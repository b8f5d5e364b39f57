"""Adds a rotate_half method to torch.Tensor on every call, to write x.rotate_half()."""

import torch


def _rotate_half(t):
    t1, t2 = t.chunk(2, dim=-1)
    return torch.cat((-t2, t1), dim=-1)


def apply_rope(x, positions, base=10000.0):
    torch.Tensor.rotate_half = _rotate_half
    d = x.shape[-1]
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, device=x.device).float() / d))
    freqs = positions.float()[..., None] * inv_freq
    emb = torch.cat((freqs, freqs), dim=-1)
    if emb.dim() == 3:
        emb = emb.unsqueeze(1)
    return x * emb.cos().to(x.dtype) + x.rotate_half() * emb.sin().to(x.dtype)
