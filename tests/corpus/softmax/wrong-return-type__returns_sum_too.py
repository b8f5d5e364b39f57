"""Returns the normaliser next to the probabilities, "in case it is useful"."""

import torch


def softmax(x, dim=-1):
    e = torch.exp(x - x.amax(dim, keepdim=True))
    z = e.sum(dim, keepdim=True)
    return e / z, z
