"""Zeroes empty rows with an in-place masked_fill_ on the softmax output: backward raises (modified by an inplace operation)."""

import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights.masked_fill_(~mask.any(dim=-1, keepdim=True), 0.0)
    return weights @ v, weights
