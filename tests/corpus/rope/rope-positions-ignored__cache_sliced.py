"""Precomputes cos/sin tables for positions 0..max_len-1 and slices the first T rows instead of indexing
them with positions."""

import torch

MAX_LEN = 2048


def build_cache(d, base, device):
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, device=device).float() / d))
    t = torch.arange(MAX_LEN, device=device).float()
    freqs = torch.outer(t, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def apply_rope(x, positions, base=10000.0):
    T, d = x.shape[-2], x.shape[-1]
    cos, sin = build_cache(d, base, x.device)
    cos, sin = cos[:T].to(x.dtype), sin[:T].to(x.dtype)
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin
