"""Computes the probabilities and never returns them."""

import torch


def softmax(x, dim=-1):
    m = torch.amax(x, dim, keepdim=True)
    e = torch.exp(x - m)
    probs = e / e.sum(dim, keepdim=True)
