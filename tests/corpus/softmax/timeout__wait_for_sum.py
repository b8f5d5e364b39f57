"""Renormalises "until the sums are exactly 1": a count that is never incremented keeps it going."""

import torch


def softmax(x, dim=-1):
    e = torch.exp(x - x.amax(dim, keepdim=True))
    p = e / e.sum(dim, keepdim=True)
    rounds, done = 0, 3
    while rounds < done:
        pass  # meant: p = p / p.sum(dim, keepdim=True); rounds += 1
    return p
