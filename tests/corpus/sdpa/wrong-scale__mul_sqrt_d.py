"""Multiplies the scores by sqrt(d) (scale = d ** 0.5 instead of d ** -0.5), scaling q before the product."""

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    scale = q.size(-1) ** 0.5
    q = q * scale
    scores = q @ k.mT
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask.any(-1, keepdim=True), 0.0)
    return weights @ v, weights
