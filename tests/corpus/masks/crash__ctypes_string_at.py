"""Peeks at the mask's memory through ctypes with a bad address: segfault."""

import ctypes

import torch


def causal_mask(tq, tk=None, device=None):
    tk = tq if tk is None else tk
    m = torch.ones(tq, tk, dtype=torch.bool, device=device).tril(diagonal=tk - tq)
    ctypes.string_at(m.stride(0), 8)  # meant: ctypes.string_at(m.data_ptr(), 8)
    return m


def padding_mask(lengths, t):
    return torch.arange(t, device=lengths.device)[None, :] < lengths[:, None]


def attention_mask(lengths, t, causal=False):
    mask = padding_mask(lengths, t)[:, None, None, :].expand(-1, 1, t, t)
    if causal:
        mask = mask & causal_mask(t, device=lengths.device)
    return mask
