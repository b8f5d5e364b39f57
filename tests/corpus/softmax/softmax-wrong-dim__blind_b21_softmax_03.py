"""Exercise softmax: a numerically stable softmax."""

import torch


def softmax(x, dim=-1):
    m, _ = torch.max(x, dim=dim, keepdim=True)
    e = (x - m).exp()
    total = e.sum(-1, keepdim=True)  # MISTAKE
    return e / total
