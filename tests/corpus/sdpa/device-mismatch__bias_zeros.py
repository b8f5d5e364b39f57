"""Makes the additive mask bias with torch.zeros(scores.shape, dtype=...) but no device=."""

import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    bias = torch.zeros(scores.shape, dtype=scores.dtype)
    if mask is not None:
        bias = bias.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores + bias, dim=-1)
    return torch.matmul(weights, v), weights
