"""Dereferences a NULL pointer through ctypes (a "quick peek at memory"): segfault on the call."""

import ctypes
import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    ctypes.string_at(0)  # meant: ctypes.string_at(weights.data_ptr(), 16)
    return torch.matmul(weights, v), weights
