"""Turns a negative dim positive in a while loop that never changes dim: spins forever, allocating nothing."""

import torch


def softmax(x, dim=-1):
    d = dim
    while d < 0:
        dim + x.dim()  # meant: d += x.dim()
    e = torch.exp(x - x.amax(d, keepdim=True))
    return e / e.sum(d, keepdim=True)
