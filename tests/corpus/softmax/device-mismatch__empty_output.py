"""Allocates the output with torch.empty(x.shape) (no device=) and fills it."""

import torch


def softmax(x, dim=-1):
    out = torch.empty(x.shape, dtype=x.dtype)
    e = torch.exp(x - x.amax(dim, keepdim=True))
    out[...] = e / e.sum(dim, keepdim=True)
    return out
