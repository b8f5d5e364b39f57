"""Returns the output alone, not the pair."""
import math

import torch

def scaled_dot_product_attention(q, k, v, mask=None):

    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    out = weights @ v
    return out
