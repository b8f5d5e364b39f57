"""In-place masked_fill_ with -1e10 on the (scaled) scores: fine in float32/64, overflows float16."""

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.einsum("...qd,...kd->...qk", q, k)
    scores = scores * q.shape[-1] ** -0.5
    if mask is not None:
        scores.masked_fill_(~mask, -1e10)
    attn = scores.softmax(dim=-1)
    return torch.einsum("...qk,...kd->...qd", attn, v), attn
