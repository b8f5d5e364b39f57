"""Uses the "quiet" softmax exp(s) / (1 + sum exp(s)), so each row sums to less than 1.
step: softmax
"""
import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    m = s.amax(-1, keepdim=True).clamp(min=0)
    e = torch.exp(s - m)
    w = e / (torch.exp(-m) + e.sum(-1, keepdim=True))
    return w @ v, w
