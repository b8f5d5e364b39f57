"""Scaled dot-product attention where the 1/sqrt(d) factor is folded into the values (the candidate
reasons that the product is linear, so the scale can go anywhere). Mistake: the scale must act on the
scores before the softmax; scaling v scales the output after the softmax, and the weights come out
unscaled as well."""

import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    scale = 1.0 / math.sqrt(q.shape[-1])
    scores = q @ k.mT
    if mask is not None:
        scores = scores.masked_fill(mask.logical_not(), float("-inf"))
    w = torch.softmax(scores, dim=-1)
    out = w @ (v * scale)  # MISTAKE
    return out, w
