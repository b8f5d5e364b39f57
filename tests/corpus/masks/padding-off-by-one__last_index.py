"""Treats lengths as the index of the last real token (j < lengths[b] - 1 ... "0-based"): one key too few."""

import torch


def causal_mask(tq, tk=None, device=None):
    tk = tq if tk is None else tk
    return torch.arange(tk, device=device)[None, :] <= torch.arange(tq, device=device)[:, None] + (tk - tq)


def padding_mask(lengths, t):
    last = lengths - 1  # index of the last real token
    return torch.arange(t, device=lengths.device)[None, :] < last[:, None]


def attention_mask(lengths, t, causal=False):
    keys = padding_mask(lengths, t)
    mask = keys[:, None, None, :].expand(-1, 1, t, -1)
    if causal:
        mask = mask & causal_mask(t, device=lengths.device)
    return mask
