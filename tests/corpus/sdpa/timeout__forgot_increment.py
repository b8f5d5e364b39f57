"""Loops over the keys with a while loop and forgets to increment the index: never returns."""

import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    Tk = k.shape[-2]
    cols = []
    j = 0
    while j < Tk:
        cols.append((q * k[..., j : j + 1, :]).sum(-1))
        # j += 1
    scores = torch.stack(cols, dim=-1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
