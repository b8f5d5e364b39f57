"""Upcasts half-precision inputs to float32 for stability and never casts back: float16/bfloat16 in, float32 out."""

import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    if q.dtype in (torch.float16, torch.bfloat16):
        q, k, v = q.float(), k.float(), v.float()
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
