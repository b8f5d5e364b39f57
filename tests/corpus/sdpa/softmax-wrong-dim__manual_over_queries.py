"""Hand-written softmax whose max and sum run over axis -2 (queries) instead of -1 (keys)."""

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.einsum("...id,...jd->...ij", q, k) * q.shape[-1] ** -0.5
    if mask is not None:
        scores = torch.where(mask, scores, torch.finfo(scores.dtype).min)
    scores = scores - scores.amax(dim=-2, keepdim=True)
    e = scores.exp()
    weights = e / e.sum(dim=-2, keepdim=True)
    return torch.einsum("...ij,...jd->...id", weights, v), weights
