"""Leaves a debugging os._exit(1) inside the function: the process dies on the first call."""

import math
import os

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    print("scores", tuple(scores.shape))
    os._exit(1)  # stop here while debugging
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
