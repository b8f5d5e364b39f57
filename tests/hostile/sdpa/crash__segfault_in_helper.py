"""Reads address 0 through ctypes in a helper: a segfault, and the line that did it."""
import ctypes

import math

import torch


def peek(t):
    return ctypes.string_at(0)

def scaled_dot_product_attention(q, k, v, mask=None):
    peek(q)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    out = weights @ v
    return out, weights
