"""Builds the answer as a Python list of slices and returns the list itself."""

import torch


def softmax(x, dim=-1):
    result = []
    for s in x.unbind(0):
        d = dim - 1 if dim > 0 else dim
        e = torch.exp(s - s.amax(d, keepdim=True)) if s.dim() else torch.ones_like(s)
        result.append(e / e.sum(d, keepdim=True))
    return result
