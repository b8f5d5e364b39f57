"""Computes the weights by hand but takes out from F.scaled_dot_product_attention."""

import math

import torch
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    return out, weights
