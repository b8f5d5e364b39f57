"""Computes the attention weights under torch.no_grad(): forward is right, but q and k never get a gradient."""

import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    with torch.no_grad():
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        weights = torch.softmax(scores, dim=-1)
    out = weights @ v
    return out, weights
