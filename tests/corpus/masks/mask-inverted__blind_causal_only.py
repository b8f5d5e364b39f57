"""The padding mask is right, but causal_mask returns the upper triangle (True on the future keys)."""
import torch


def causal_mask(tq, tk=None, device=None):
    if tk is None:
        tk = tq
    # future positions
    return torch.triu(torch.ones(tq, tk, dtype=torch.bool, device=device), diagonal=tk - tq + 1)


def padding_mask(lengths, t):
    return torch.arange(t, device=lengths.device)[None, :] < lengths[:, None]


def attention_mask(lengths, t, causal=False):
    m = padding_mask(lengths, t)[:, None, None, :].expand(-1, 1, t, -1)
    if causal:
        m = m & causal_mask(t, device=lengths.device)
    return m
