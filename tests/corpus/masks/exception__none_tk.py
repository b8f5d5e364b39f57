"""Never fills in the default: tk - tq with tk None raises TypeError."""

import torch


def causal_mask(tq, tk=None, device=None):
    return torch.ones(tq, tk or tq, dtype=torch.bool, device=device).tril(diagonal=tk - tq)


def padding_mask(lengths, t):
    return torch.arange(t, device=lengths.device)[None, :] < lengths[:, None]


def attention_mask(lengths, t, causal=False):
    mask = padding_mask(lengths, t)[:, None, None, :].expand(-1, 1, t, t)
    if causal:
        mask = mask & causal_mask(t, t, device=lengths.device)
    return mask
