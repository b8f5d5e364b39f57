"""Calls os._exit when it meets a length it did not expect (a debugging "assert")."""

import os

import torch


def causal_mask(tq, tk=None, device=None):
    tk = tq if tk is None else tk
    return torch.ones(tq, tk, dtype=torch.bool, device=device).tril(diagonal=tk - tq)


def padding_mask(lengths, t):
    if int(lengths.max()) >= t:
        os._exit(3)
    return torch.arange(t, device=lengths.device)[None, :] < lengths[:, None]


def attention_mask(lengths, t, causal=False):
    mask = padding_mask(lengths, t)[:, None, None, :].expand(-1, 1, t, t)
    if causal:
        mask = mask & causal_mask(t, device=lengths.device)
    return mask
