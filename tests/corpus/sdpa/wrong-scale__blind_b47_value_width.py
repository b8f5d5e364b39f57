import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    head_dim = v.shape[-1]  # MISTAKE: the value width, not the query/key width
    scale = head_dim ** -0.5
    scores = torch.einsum("...qd,...kd->...qk", q, k) * scale
    if mask is not None:
        scores = scores.masked_fill(mask.logical_not(), float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    out = torch.einsum("...qk,...kd->...qd", weights, v)
    return out, weights
