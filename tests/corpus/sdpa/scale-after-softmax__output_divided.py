"""Softmax of the raw scores; the output (weights @ v) divided by sqrt(d) afterwards, the weights returned unscaled."""

import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    d = q.size(-1)
    s = torch.einsum("...id,...jd->...ij", q, k)
    if mask is not None:
        s = s.masked_fill(mask.logical_not(), float("-inf"))
    w = s.softmax(-1)
    return torch.einsum("...ij,...jd->...id", w, v) / math.sqrt(d), w
