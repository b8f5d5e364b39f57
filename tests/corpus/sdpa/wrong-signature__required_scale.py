"""Takes the scale as a required fifth positional argument: (q, k, v, mask, scale)."""

import torch


def scaled_dot_product_attention(q, k, v, mask, scale):
    scores = q @ k.transpose(-2, -1) * scale
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
