"""weights = exp(scores - logsumexp(scores)); a mask applied with torch.where and finfo.min."""

import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.einsum("...id,...jd->...ij", q, k).div(math.sqrt(q.size(-1)))
    if mask is not None:
        lowest = torch.finfo(scores.dtype).min
        scores = torch.where(mask, scores, lowest)
    log_weights = scores - torch.logsumexp(scores, dim=-1, keepdim=True)
    weights = log_weights.exp()
    out = torch.einsum("...ij,...jd->...id", weights, v)
    return out, weights
