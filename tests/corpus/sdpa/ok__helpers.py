"""Split into small helpers (scores, mask, softmax, mix); -inf fill with an explicit empty-row guard before the softmax."""

import math

import torch


def attention_scores(q, k):
    """(..., Tq, d) x (..., Tk, d) -> (..., Tq, Tk), scaled."""
    return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])


def apply_mask(scores, mask):
    if mask is None:
        return scores
    return scores.masked_fill(~mask, float("-inf"))


def safe_softmax(scores):
    # a row that is entirely -inf would give 0/0: take the max over finite values only
    row_max = scores.amax(dim=-1, keepdim=True)
    row_max = torch.where(torch.isinf(row_max), torch.zeros_like(row_max), row_max)
    e = (scores - row_max).exp()
    denom = e.sum(dim=-1, keepdim=True)
    return e / denom.clamp_min(torch.finfo(e.dtype).tiny)


def scaled_dot_product_attention(q, k, v, mask=None):
    weights = safe_softmax(apply_mask(attention_scores(q, k), mask))
    return weights @ v, weights
