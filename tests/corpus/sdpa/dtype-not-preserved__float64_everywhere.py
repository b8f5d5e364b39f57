"""Computes everything in float64 "for accuracy" and returns float64 whatever the input dtype."""

import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    q, k, v = q.double(), k.double(), v.double()
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(torch.float64).min)
    weights = torch.softmax(scores, dim=-1)
    return torch.matmul(weights, v), weights
