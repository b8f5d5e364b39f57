"""Causal offset with the wrong sign: j <= i - (tk - tq) instead of j <= i + (tk - tq)."""
import torch


def causal_mask(tq, tk=None, device=None):
    if tk is None:
        tk = tq
    i = torch.arange(tq, device=device).view(-1, 1)
    j = torch.arange(tk, device=device).view(1, -1)
    return j <= i - (tk - tq)


def padding_mask(lengths, t):
    return torch.arange(t, device=lengths.device).view(1, -1) < lengths.view(-1, 1)


def attention_mask(lengths, t, causal=False):
    m = padding_mask(lengths, t).view(-1, 1, 1, t).expand(-1, 1, t, t)
    if causal:
        m = m & causal_mask(t, t, lengths.device)
    return m
