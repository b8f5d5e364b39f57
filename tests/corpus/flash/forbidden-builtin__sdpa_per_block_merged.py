"""Calls the built-in attention on each key block and merges the blocks by their log-sum-exp."""

import math

import torch
from torch.nn.functional import scaled_dot_product_attention as attend


def flash_attention(q, k, v, causal=False, block_size=64):
    Tq, Tk = q.shape[-2], k.shape[-2]
    scale = 1 / math.sqrt(q.shape[-1])
    lse = torch.full(q.shape[:-1], -math.inf, dtype=q.dtype, device=q.device)
    out = torch.zeros_like(q)
    for j in range(0, Tk, block_size):
        kb, vb = k[..., j:j + block_size, :], v[..., j:j + block_size, :]
        s = q @ kb.transpose(-2, -1) * scale
        mask = None
        if causal:
            cols = torch.arange(j, j + kb.shape[-2], device=q.device)
            mask = cols[None] <= torch.arange(Tq, device=q.device)[:, None] + Tk - Tq
            s = s.masked_fill(~mask, -math.inf)
        blk_lse = torch.logsumexp(s, -1)
        blk_out = attend(q, kb, vb, attn_mask=mask).nan_to_num(0.0)
        new = torch.logaddexp(lse, blk_lse)
        safe = new.nan_to_num(neginf=0.0)
        out = out * torch.exp(lse - safe)[..., None] + blk_out * torch.exp(blk_lse - safe)[..., None]
        lse = new
    return out
