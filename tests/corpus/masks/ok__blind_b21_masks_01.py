"""Exercise masks: causal and padding masks."""

import torch


def causal_mask(tq, tk=None, device=None):
    if tk is None:
        tk = tq
    # lower triangle shifted right by tk - tq: the queries are the last tq positions
    return torch.ones(tq, tk, dtype=torch.bool, device=device).tril(diagonal=tk - tq)


def padding_mask(lengths, t):
    cols = torch.arange(t, device=lengths.device).expand(lengths.size(0), t)
    return cols < lengths.unsqueeze(-1)


def attention_mask(lengths, t, causal=False):
    key_ok = padding_mask(lengths, t).view(-1, 1, 1, t)
    full = key_ok.repeat(1, 1, t, 1)  # (B, 1, t, t)
    if causal:
        full = full & causal_mask(t, device=lengths.device)
    return full
