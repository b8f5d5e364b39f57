"""Softmax in at least float32; casts back for the product with v but returns the float32 weights."""

import torch
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.einsum("...qd,...kd->...qk", q, k) / q.size(-1) ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    acc_dtype = torch.promote_types(scores.dtype, torch.float32)
    weights = F.softmax(scores, dim=-1, dtype=acc_dtype)
    out = torch.einsum("...qk,...kd->...qd", weights.to(v.dtype), v)
    return out, weights
