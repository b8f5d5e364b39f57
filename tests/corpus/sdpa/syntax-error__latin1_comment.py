"""Saved as Latin-1: a comment with an accented letter makes the file invalid UTF-8."""

import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    # pré-softmax scores, scaled
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
