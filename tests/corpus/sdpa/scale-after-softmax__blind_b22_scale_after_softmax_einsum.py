"""sdpa: einsum with an additive -inf bias built from the mask."""

import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    scale = 1.0 / math.sqrt(q.shape[-1])
    bias = torch.zeros((), dtype=q.dtype, device=q.device)
    if mask is not None:
        bias = torch.zeros(mask.shape, dtype=q.dtype, device=q.device).masked_fill(~mask, float("-inf"))
    attn = torch.softmax(torch.einsum("...qd,...kd->...qk", q, k) + bias, dim=-1) * scale  # MISTAKE
    return attn @ v, attn
