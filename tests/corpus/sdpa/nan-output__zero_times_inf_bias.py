"""Builds the additive bias as (1 - mask) * -inf: the kept keys get 0 * -inf = NaN."""

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    scale = q.size(-1) ** -0.5
    scores = torch.einsum("...qd,...kd->...qk", q, k) * scale
    if mask is not None:
        keep = mask.to(scores.dtype)
        scores = scores + (1.0 - keep) * float("-inf")
    weights = torch.softmax(scores, dim=-1)
    return torch.einsum("...qk,...kd->...qd", weights, v), weights
