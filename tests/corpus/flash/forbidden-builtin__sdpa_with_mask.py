"""Hands the whole job to F.scaled_dot_product_attention with a bottom-right mask."""

import torch
import torch.nn.functional as F


def flash_attention(q, k, v, causal=False, block_size=64):
    Tq, Tk = q.shape[-2], k.shape[-2]
    mask = None
    if causal:
        mask = torch.ones(Tq, Tk, dtype=torch.bool, device=q.device).tril(Tk - Tq)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
