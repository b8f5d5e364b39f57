"""tril with diagonal = tk - tq for causal; arange comparisons for padding."""

import torch


def causal_mask(tq, tk=None, device=None):
    tk = tk if tk is not None else tq
    return torch.ones(tq, tk, dtype=torch.bool, device=device).tril(diagonal=tk - tq)


def padding_mask(lengths, t):
    return torch.arange(t, device=lengths.device).unsqueeze(0) < lengths.unsqueeze(1)


def attention_mask(lengths, t, causal=False):
    mask = padding_mask(lengths, t)[:, None, None, :].expand(-1, 1, t, -1)
    if causal:
        mask = mask & causal_mask(t, device=lengths.device)
    return mask
