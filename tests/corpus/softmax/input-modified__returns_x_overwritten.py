"""Overwrites x with its own probabilities and returns it."""

import torch


def softmax(x, dim=-1):
    m = x.amax(dim, keepdim=True)
    e = torch.exp(x - m)
    x.copy_(e / e.sum(dim, keepdim=True))
    return x
