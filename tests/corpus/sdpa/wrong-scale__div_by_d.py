"""Divides the scores by d instead of sqrt(d)."""

import torch
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    d = q.size(-1)
    scores = torch.matmul(q, k.transpose(-2, -1)) / d
    if mask is not None:
        scores = scores.masked_fill(mask.logical_not(), torch.finfo(scores.dtype).min)
    attn = F.softmax(scores, dim=-1)
    return torch.matmul(attn, v), attn
