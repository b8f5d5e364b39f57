"""Raises an exception whose message itself raises."""
import math

import torch


class Weird(Exception):
    def __str__(self):
        raise ValueError("no")

def scaled_dot_product_attention(q, k, v, mask=None):
    raise Weird()
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    out = weights @ v
    return out, weights
