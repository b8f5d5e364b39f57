"""Compares arange(t) with lengths without adding an axis: (t,) against (B,) only works when B == t."""

import torch


def causal_mask(tq, tk=None, device=None):
    tk = tq if tk is None else tk
    return torch.ones(tq, tk, dtype=torch.bool, device=device).tril(diagonal=tk - tq)


def padding_mask(lengths, t):
    return torch.arange(t, device=lengths.device) < lengths


def attention_mask(lengths, t, causal=False):
    mask = padding_mask(lengths, t)[:, None, None, :].expand(-1, 1, t, t)
    if causal:
        mask = mask & causal_mask(t, device=lengths.device)
    return mask
