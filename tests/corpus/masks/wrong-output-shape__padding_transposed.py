"""padding_mask returns (t, B): positions down the rows, sequences across."""

import torch


def causal_mask(tq, tk=None, device=None):
    tk = tq if tk is None else tk
    return torch.arange(tk, device=device) <= torch.arange(tq, device=device)[:, None] + (tk - tq)


def padding_mask(lengths, t):
    return torch.arange(t, device=lengths.device)[:, None] < lengths[None, :]  # (t, B)


def attention_mask(lengths, t, causal=False):
    keys = padding_mask(lengths, t).T  # (B, t)
    mask = keys[:, None, None, :].expand(-1, 1, t, -1)
    if causal:
        mask = mask & causal_mask(t, device=lengths.device)
    return mask
