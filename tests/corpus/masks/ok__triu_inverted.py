"""Builds the forbidden part (the strict future) with triu and inverts it; greater-than for padding."""

import torch


def causal_mask(tq, tk=None, device=None):
    if tk is None:
        tk = tq
    future = torch.triu(torch.ones(tq, tk, dtype=torch.bool, device=device), diagonal=tk - tq + 1)
    return ~future


def padding_mask(lengths, t):
    positions = torch.arange(t, device=lengths.device)
    return lengths[:, None] > positions


def attention_mask(lengths, t, causal=False):
    B = lengths.shape[0]
    keys = padding_mask(lengths, t).view(B, 1, 1, t)
    grid = torch.ones(B, 1, t, t, dtype=torch.bool, device=lengths.device) & keys
    if causal:
        grid = grid & causal_mask(t, t, device=lengths.device)
    return grid
