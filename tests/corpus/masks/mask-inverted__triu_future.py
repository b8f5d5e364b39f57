"""True marks what to hide (the nn.MultiheadAttention habit): the strict future, and the padded keys."""

import torch


def causal_mask(tq, tk=None, device=None):
    tk = tq if tk is None else tk
    return torch.ones(tq, tk, dtype=torch.bool, device=device).triu(diagonal=tk - tq + 1)


def padding_mask(lengths, t):
    return torch.arange(t, device=lengths.device)[None, :] >= lengths[:, None]


def attention_mask(lengths, t, causal=False):
    hide = padding_mask(lengths, t)[:, None, None, :].expand(-1, 1, t, t)
    if causal:
        hide = hide | causal_mask(t, device=lengths.device)
    return hide
