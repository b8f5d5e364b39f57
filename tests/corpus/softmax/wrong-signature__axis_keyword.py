"""Calls the argument axis, as NumPy does, so softmax(x, dim=0) cannot be called."""

import torch


def softmax(x, axis=-1):
    e = torch.exp(x - x.amax(axis, keepdim=True))
    return e / e.sum(axis, keepdim=True)
