"""Masks built from the complement of an upper triangle (triu with the bottom-right offset shifted by
one), a 1-based cumsum compared with the lengths for padding, and a broadcast AND for the combined
mask. Correct (unusual style: triu complement, cumsum positions, explicit expand)."""

import torch


def causal_mask(tq, tk=None, device=None):
    if tk is None:
        tk = tq
    future = torch.ones(tq, tk, dtype=torch.bool, device=device).triu(diagonal=tk - tq + 1)
    return ~future


def padding_mask(lengths, t):
    pos1 = torch.ones(lengths.shape[0], t, dtype=torch.long, device=lengths.device).cumsum(dim=1)  # 1..t
    return pos1 <= lengths.unsqueeze(1)


def attention_mask(lengths, t, causal=False):
    keys = padding_mask(lengths, t).view(-1, 1, 1, t)
    full = keys.expand(-1, 1, t, t)
    if causal:
        full = full & causal_mask(t, device=lengths.device).view(1, 1, t, t)
    return full
