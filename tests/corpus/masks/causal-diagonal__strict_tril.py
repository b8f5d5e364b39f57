"""Uses tril(diagonal=tk - tq - 1): no query can see its own position."""

import torch


def causal_mask(tq, tk=None, device=None):
    tk = tq if tk is None else tk
    return torch.tril(torch.ones(tq, tk, dtype=torch.bool, device=device), diagonal=tk - tq - 1)


def padding_mask(lengths, t):
    return torch.arange(t, device=lengths.device) < lengths[:, None]


def attention_mask(lengths, t, causal=False):
    m = padding_mask(lengths, t)[:, None, None, :].expand(-1, -1, t, -1)
    return m & causal_mask(t, device=lengths.device) if causal else m
