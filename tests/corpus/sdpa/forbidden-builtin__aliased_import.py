"""Imports torch.nn.functional.scaled_dot_product_attention under an alias and calls it for the output."""

import torch
from torch.nn.functional import scaled_dot_product_attention as _fast_attention


def scaled_dot_product_attention(q, k, v, mask=None):
    out = _fast_attention(q, k, v, attn_mask=mask)
    # the weights still have to be returned, so compute them too
    logits = torch.einsum("...qd,...kd->...qk", q, k) / q.size(-1) ** 0.5
    if mask is not None:
        logits = torch.where(mask, logits, torch.finfo(logits.dtype).min)
    return out, logits.softmax(-1)
