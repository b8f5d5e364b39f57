"""Scaled dot-product attention that adds the mask with torch.where, following a tutorial where the
boolean mask marks the positions to *hide*. Mistake: the contract's mask is True = may attend, so
torch.where(mask, -inf, scores) hides exactly the keys the query is allowed to see and shows the rest."""

import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = k.size(-1)
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d_k)
    if mask is not None:
        neg = torch.tensor(float("-inf"), dtype=scores.dtype, device=scores.device)
        scores = torch.where(mask, neg, scores)  # MISTAKE
    attn = torch.softmax(scores, dim=-1)
    attn = torch.nan_to_num(attn, nan=0.0)
    return torch.matmul(attn, v), attn
