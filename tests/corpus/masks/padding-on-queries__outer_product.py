"""Masks both padded keys and padded queries with an outer product of the padding mask."""

import torch


def causal_mask(tq, tk=None, device=None):
    tk = tq if tk is None else tk
    i = torch.arange(tq, device=device)[:, None]
    j = torch.arange(tk, device=device)[None, :]
    return j <= i + tk - tq


def padding_mask(lengths, t):
    return torch.arange(t, device=lengths.device) < lengths[:, None]


def attention_mask(lengths, t, causal=False):
    pad = padding_mask(lengths, t)
    mask = (pad[:, :, None] & pad[:, None, :]).unsqueeze(1)  # (B, 1, t, t): real query AND real key
    if causal:
        mask = mask & causal_mask(t, device=lengths.device)
    return mask
