"""Computes in float32 for accuracy and returns float32 whatever came in."""

import torch


def softmax(x, dim=-1):
    x = x.to(torch.float32)
    e = torch.exp(x - x.amax(dim, keepdim=True))
    return e / e.sum(dim, keepdim=True)
