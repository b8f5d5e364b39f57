"""Always normalises over the last axis: the dim argument is accepted but never used."""
import torch


def softmax(x, dim=-1):
    # shift by the row max for stability
    shifted = x - x.amax(-1, keepdim=True)
    e = shifted.exp()
    return e / e.sum(-1, keepdim=True)
