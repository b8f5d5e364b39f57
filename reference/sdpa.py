"""Scaled dot-product attention: a model answer.

softmax(q @ k^T / sqrt(d) + mask) @ v, where a False mask entry hides that key.
"""

import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    """q (..., Tq, d), k (..., Tk, d), v (..., Tk, dv); mask bool, broadcastable to (..., Tq, Tk).

    Returns out (..., Tq, dv) and weights (..., Tq, Tk).
    """
    d = q.size(-1)
    # why 1/sqrt(d): q.k sums d products, so its spread grows like sqrt(d); this keeps softmax out of saturation
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)  # (..., Tq, Tk)
    if mask is not None:
        # True = may attend; -inf before the softmax gives a hidden key exactly zero probability
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)  # (..., Tq, Tk), each row sums to 1 over the keys
    if mask is not None:
        # a query that sees no key: softmax of an all -inf row is NaN; give zeros, as PyTorch's SDPA does
        weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    out = weights @ v  # (..., Tq, dv)
    return out, weights
