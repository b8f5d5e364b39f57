"""Builds the scale as a 1-element tensor with torch.full((1,), ...) and no device=: a CPU tensor beside GPU scores."""

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    d = q.shape[-1]
    scale = torch.full((1,), d ** -0.5, dtype=q.dtype)
    scores = (q @ k.transpose(-2, -1)) * scale
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
