"""causal_mask returns torch.tril(torch.ones(...)): a float 0/1 matrix, which SDPA would add to the scores."""

import torch


def causal_mask(tq, tk=None, device=None):
    tk = tq if tk is None else tk
    return torch.tril(torch.ones(tq, tk, device=device), diagonal=tk - tq)


def padding_mask(lengths, t):
    return torch.arange(t, device=lengths.device)[None, :] < lengths[:, None]


def attention_mask(lengths, t, causal=False):
    mask = padding_mask(lengths, t)[:, None, None, :].expand(-1, 1, t, t)
    if causal:
        mask = mask & causal_mask(t, device=lengths.device).bool()
    return mask
