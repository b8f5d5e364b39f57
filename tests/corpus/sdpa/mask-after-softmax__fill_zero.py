"""Zeroes hidden keys with masked_fill(~mask, 0) after the softmax; the rows no longer sum to 1."""

import torch
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    scale = 1 / q.shape[-1] ** 0.5
    p = F.softmax(torch.einsum("...qd,...kd->...qk", q, k) * scale, dim=-1)
    if mask is not None:
        p = p.masked_fill(~mask, 0.0)
    out = torch.einsum("...qk,...kd->...qd", p, v)
    return out, p
