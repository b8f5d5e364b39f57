"""causal_mask accepts device= and never uses it: the mask is always made on the CPU."""

import torch


def causal_mask(tq, tk=None, device=None):
    tk = tq if tk is None else tk
    return torch.ones(tq, tk, dtype=torch.bool).tril(diagonal=tk - tq)


def padding_mask(lengths, t):
    return torch.arange(t, device=lengths.device)[None, :] < lengths[:, None]


def attention_mask(lengths, t, causal=False):
    mask = padding_mask(lengths, t)[:, None, None, :].expand(-1, 1, t, t)
    if causal:
        mask = mask & causal_mask(t).to(lengths.device)
    return mask
