"""Padding keeps key j while j <= lengths[b]: one key too many."""
import torch


def causal_mask(tq, tk=None, device=None):
    tk = tq if tk is None else tk
    return torch.tril(torch.ones(tq, tk, device=device), diagonal=tk - tq).bool()


def padding_mask(lengths, t):
    idx = torch.arange(t, device=lengths.device)
    return idx[None, :] <= lengths[:, None]


def attention_mask(lengths, t, causal=False):
    m = padding_mask(lengths, t)[:, None, None, :].expand(-1, 1, t, t)
    if causal:
        m = m & causal_mask(t, device=lengths.device)
    return m
