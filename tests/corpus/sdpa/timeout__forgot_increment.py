"""Fills the score matrix key by key in a while loop and forgets to increment the index: never returns."""

import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    Tk = k.shape[-2]
    scores = q.new_empty(*torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]), q.shape[-2], Tk)
    j = 0
    while j < Tk:
        scores[..., j] = (q * k[..., j : j + 1, :]).sum(-1)
        # TODO j += 1
    scores = scores / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
