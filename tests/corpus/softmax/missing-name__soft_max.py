"""The function is spelled soft_max."""

import torch


def soft_max(x, dim=-1):
    e = torch.exp(x - x.amax(dim, keepdim=True))
    return e / e.sum(dim, keepdim=True)
