"""Scaled dot-product attention whose softmax runs on a 2-D "one row per query" view of the scores.
Mistake: the rows are cut with reshape(-1, scores.shape[-2]), the number of queries, instead of the
number of keys; when Tq == Tk that is harmless, otherwise each "row" straddles two queries' keys and
the normalisation runs over the wrong set of entries."""

import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    full_shape = scores.shape
    rows = scores.reshape(-1, scores.shape[-2])  # MISTAKE
    rows = rows - rows.amax(dim=-1, keepdim=True)
    e = rows.exp()
    weights = (e / e.sum(dim=-1, keepdim=True)).reshape(full_shape)
    return weights @ v, weights
