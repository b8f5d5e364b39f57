"""Fills the causal rows in a while loop whose row counter is never advanced: spins forever."""

import torch


def causal_mask(tq, tk=None, device=None):
    tk = tq if tk is None else tk
    limits = []
    i = 0
    while i < tq:
        if len(limits) < tq:
            limits.append(i + tk - tq)  # meant: i += 1 after this
    lim = torch.tensor(limits, device=device)
    return torch.arange(tk, device=device)[None, :] <= lim[:, None]


def padding_mask(lengths, t):
    return torch.arange(t, device=lengths.device)[None, :] < lengths[:, None]


def attention_mask(lengths, t, causal=False):
    mask = padding_mask(lengths, t)[:, None, None, :].expand(-1, 1, t, t)
    if causal:
        mask = mask & causal_mask(t, device=lengths.device)
    return mask
