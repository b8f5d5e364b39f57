"""Builds the scores keys-first (k @ q^T, softmax over dim -2) and returns weights as (..., Tk, Tq)."""

import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = k @ q.transpose(-2, -1) / math.sqrt(q.size(-1))  # (..., Tk, Tq)
    if mask is not None:
        scores = scores.masked_fill(~mask.transpose(-2, -1), torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-2)  # normalise over keys, which are now axis -2
    out = weights.transpose(-2, -1) @ v
    return out, weights
