"""The textbook stable softmax: subtract each slice's max, exponentiate, normalise."""

import torch


def softmax(x, dim=-1):
    z = x - x.amax(dim=dim, keepdim=True)
    e = z.exp()
    return e / e.sum(dim=dim, keepdim=True)
