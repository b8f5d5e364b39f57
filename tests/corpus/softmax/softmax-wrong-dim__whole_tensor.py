"""Normalises over every element at once (logsumexp of the flattened tensor), so no slice sums to 1."""

import torch


def softmax(x, dim=-1):
    return torch.exp(x - torch.logsumexp(x.reshape(-1), dim=0))
