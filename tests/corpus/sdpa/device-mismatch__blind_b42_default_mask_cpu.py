"""SDPA that, when no mask is given, builds an all-True default mask with torch.ones (no device=) and uses it in masked_fill, so CUDA inputs meet a CPU mask."""
import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    Tq, Tk = q.shape[-2], k.shape[-2]
    if mask is None:
        mask = torch.ones(Tq, Tk, dtype=torch.bool)  # always on the CPU
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
