"""A helper that calls itself with no base case."""
import math

import torch


def scale(x, d):
    return scale(x, d) / math.sqrt(d)

def scaled_dot_product_attention(q, k, v, mask=None):
    q = scale(q, q.size(-1))
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    out = weights @ v
    return out, weights
