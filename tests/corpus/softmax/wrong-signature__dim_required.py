"""dim has no default, and is keyword-only."""

import torch


def softmax(x, *, dim):
    e = torch.exp(x - x.amax(dim, keepdim=True))
    return e / e.sum(dim, keepdim=True)
