"""Asks for 6 GiB: more than the check allows (without a cap, calloc would give it lazily)."""
import math

import torch

def scaled_dot_product_attention(q, k, v, mask=None):
    scratch = bytearray(6 << 30)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    out = weights @ v
    return out, weights
