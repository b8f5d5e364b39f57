"""torch.where(mask, scores, -inf) then a plain softmax: right everywhere except a query with no visible key (NaN)."""

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.einsum("...qd,...kd->...qk", q, k) / q.size(-1) ** 0.5
    if mask is not None:
        scores = torch.where(mask, scores, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    out = torch.einsum("...qk,...kd->...qd", weights, v)
    return out, weights
