"""Applies the mask by multiplying the scores by it (hidden scores become 0, not -inf)."""
import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    s = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s * mask.to(s.dtype)
    w = torch.softmax(s, dim=-1)
    return torch.matmul(w, v), w
