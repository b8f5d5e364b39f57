"""Textbook matmul version: masked_fill with torch.finfo(dtype).min, torch.softmax over the last axis."""

import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    d = q.size(-1)
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d)
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    out = torch.matmul(weights, v)
    return out, weights
