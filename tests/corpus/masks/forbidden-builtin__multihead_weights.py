"""Gets the padding pattern from nn.MultiheadAttention's returned weights (its key_padding_mask)."""

import torch
from torch import nn


def causal_mask(tq, tk=None, device=None):
    tk = tq if tk is None else tk
    return torch.ones(tq, tk, dtype=torch.bool, device=device).tril(diagonal=tk - tq)


def padding_mask(lengths, t):
    B = lengths.numel()
    attn = nn.MultiheadAttention(1, 1, batch_first=True).to(lengths.device)
    x = torch.zeros(B, t, 1, device=lengths.device)
    ignore = torch.arange(t, device=lengths.device)[None, :] >= lengths[:, None]
    _, w = attn(x, x, x, key_padding_mask=ignore)  # (B, t, t)
    return w[:, 0, :] > 0


def attention_mask(lengths, t, causal=False):
    mask = padding_mask(lengths, t)[:, None, None, :].expand(-1, 1, t, t)
    if causal:
        mask = mask & causal_mask(t, device=lengths.device)
    return mask
