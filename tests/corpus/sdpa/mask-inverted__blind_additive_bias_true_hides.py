"""Builds an additive bias that puts -inf where the mask is True (the nn.MultiheadAttention "True = ignore" convention)."""
import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        bias = torch.zeros(mask.shape, dtype=scores.dtype, device=scores.device)
        bias = bias.masked_fill(mask, float("-inf"))
        scores = scores + bias
    w = scores.softmax(-1)
    return w @ v, w
