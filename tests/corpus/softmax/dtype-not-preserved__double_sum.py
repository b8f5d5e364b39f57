"""Accumulates the sum in float64; dividing by it promotes the result to float64."""

import torch


def softmax(x, dim=-1):
    e = torch.exp(x - x.amax(dim, keepdim=True))
    total = e.sum(dim, keepdim=True, dtype=torch.float64)
    return e / total
