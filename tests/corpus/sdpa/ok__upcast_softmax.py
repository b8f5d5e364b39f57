"""Softmax computed in at least float32 (HF/Meta style) and cast back to the input dtype before returning."""

import math

import torch
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    d = q.size(-1)
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d)
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    compute_dtype = torch.promote_types(scores.dtype, torch.float32)
    weights = F.softmax(scores.to(compute_dtype), dim=-1).to(q.dtype)
    out = torch.matmul(weights, v)
    return out, weights
