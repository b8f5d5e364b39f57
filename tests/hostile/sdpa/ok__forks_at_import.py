"""Correct, but forks at import: the copy runs on inside the checker and must not report twice (where the
sandbox refuses new processes, the fork fails quietly)."""
import math
import os

import torch

try:
    _child = os.fork()
except OSError as e:
    print(f"could not fork: {e}")


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
