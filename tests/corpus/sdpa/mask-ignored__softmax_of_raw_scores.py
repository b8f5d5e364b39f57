"""Builds the masked scores under a new name but takes the softmax of the unmasked ones."""

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.mT / q.size(-1) ** 0.5
    masked = scores
    if mask is not None:
        masked = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = scores.softmax(dim=-1)
    return weights @ v, weights
