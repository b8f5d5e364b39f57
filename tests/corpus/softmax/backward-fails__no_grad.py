"""Wraps the computation in no_grad "for speed": the output is cut off from x."""

import torch


@torch.no_grad()
def softmax(x, dim=-1):
    e = (x - x.amax(dim, keepdim=True)).exp()
    return e / e.sum(dim, keepdim=True)
