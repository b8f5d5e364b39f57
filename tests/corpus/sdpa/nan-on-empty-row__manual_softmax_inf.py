"""Hand-written softmax over scores filled with -inf: an all -inf row gives (-inf) - (-inf) = NaN."""

import math

import torch


def softmax(x, dim=-1):
    m = x.max(dim=dim, keepdim=True).values
    e = torch.exp(x - m)
    return e / e.sum(dim=dim, keepdim=True)


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, -math.inf)
    weights = softmax(scores)
    return weights @ v, weights
