"""Scales q in place (q /= sqrt(d)): right numbers, but the caller's q is changed."""

import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    with torch.no_grad():
        q /= math.sqrt(q.size(-1))
    scores = q @ k.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = scores.softmax(dim=-1)
    return weights @ v, weights
