"""Computes scale = 1/sqrt(d) but never applies it to the einsum scores."""

import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    d = q.shape[-1]
    scale = 1.0 / math.sqrt(d)  # noqa: F841  (computed, then forgotten)
    logits = torch.einsum("...qd,...kd->...qk", q, k)
    if mask is not None:
        logits = torch.where(mask, logits, torch.finfo(logits.dtype).min)
    probs = logits.softmax(dim=-1)
    out = torch.einsum("...qk,...kd->...qd", probs, v)
    return out, probs
