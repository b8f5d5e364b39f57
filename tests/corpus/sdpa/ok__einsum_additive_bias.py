"""einsum for both products; the mask becomes an additive bias of 0 / finfo.min added to the scores."""

import torch
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    scale = q.shape[-1] ** -0.5
    scores = torch.einsum("...qd,...kd->...qk", q, k) * scale
    if mask is not None:
        bias = torch.zeros(mask.shape, dtype=scores.dtype, device=scores.device)
        bias = bias.masked_fill(mask.logical_not(), torch.finfo(scores.dtype).min)
        scores = scores + bias
    weights = F.softmax(scores, dim=-1)
    out = torch.einsum("...qk,...kv->...qv", weights, v)
    return out, weights
