"""Scaled dot-product attention that takes the scaling width from the value tensor (the candidate
reads "d" as the model width that flows out of the layer). Mistake: scores are divided by sqrt(dv),
v's last dim, instead of sqrt(d), q's and k's last dim; identical whenever dv == d."""

import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    d = v.shape[-1]  # MISTAKE
    att = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(d))
    if mask is not None:
        att = att.masked_fill(~mask, float("-inf"))
    att = torch.softmax(att, dim=-1)
    return torch.matmul(att, v), att
