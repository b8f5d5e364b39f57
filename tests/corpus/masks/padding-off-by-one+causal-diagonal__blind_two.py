"""Two mistakes: padding keeps j < lengths - 1 (one key too few) and the causal mask hides the diagonal."""
import torch


def causal_mask(tq, tk=None, device=None):
    tk = tq if tk is None else tk
    return torch.ones(tq, tk, dtype=torch.bool, device=device).tril(diagonal=tk - tq - 1)


def padding_mask(lengths, t):
    return torch.arange(t, device=lengths.device)[None, :] < (lengths[:, None] - 1)


def attention_mask(lengths, t, causal=False):
    m = padding_mask(lengths, t)[:, None, None, :].expand(-1, 1, t, t)
    if causal:
        m = m & causal_mask(t, device=lengths.device)
    return m
