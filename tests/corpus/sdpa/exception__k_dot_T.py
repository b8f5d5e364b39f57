"""Uses k.T, which reverses every axis of a batched tensor, so the matmul shapes do not line up."""

import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.matmul(q, k.T) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    return torch.matmul(weights, v), weights
