"""Ignores its dim argument: the max and the sum always run over the last axis."""

import torch


def softmax(x, dim=-1):
    e = torch.exp(x - x.max(-1, keepdim=True).values)
    return e / e.sum(-1, keepdim=True)
