"""Shifts v in place (v.add_(1.0)) and subtracts 1 back in the product: right numbers, but the caller's v is changed."""

import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    d = q.shape[-1]
    scores = torch.einsum("...qd,...kd->...qk", q, k) / math.sqrt(d)
    if mask is not None:
        scores = torch.where(mask, scores, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    with torch.no_grad():
        v.add_(1.0)
    out = weights @ (v - 1.0)
    return out, weights
