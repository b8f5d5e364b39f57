"""Replaces torch.exp at import with a "safe" version that clamps its argument."""

import torch

_exp = torch.exp
torch.exp = lambda t: _exp(t.clamp(max=80.0))


def softmax(x, dim=-1):
    e = torch.exp(x)
    return e / e.sum(dim, keepdim=True)
