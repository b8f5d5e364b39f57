"""Softmax over dim=2, written with 4-D (B, H, Tq, Tk) scores in mind: that is the query axis there (and it raises on 2-D inputs)."""
import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = q.shape[-1]
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    p_attn = torch.softmax(scores, dim=2)
    return torch.matmul(p_attn, v), p_attn
