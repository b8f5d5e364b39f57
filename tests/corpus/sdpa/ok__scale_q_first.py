"""Scales q by 1/sqrt(d) before the product; torch.where with -inf, then zeroes rows that see no key."""

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    q = q * (q.size(-1) ** -0.5)
    scores = q @ k.mT
    if mask is not None:
        scores = torch.where(mask, scores, float("-inf"))
    weights = scores.softmax(dim=-1)
    if mask is not None:
        # rows with no visible key are all -inf -> NaN; make them zeros
        has_key = mask.any(dim=-1, keepdim=True)
        weights = torch.where(has_key, weights, 0.0)
    return weights @ v, weights
