"""Compares key and query indices directly (j <= i), forgetting that the queries are the last tq positions."""

import torch


def causal_mask(tq, tk=None, device=None):
    tk = tq if tk is None else tk
    qi = torch.arange(tq, device=device).unsqueeze(1)
    kj = torch.arange(tk, device=device).unsqueeze(0)
    return kj <= qi


def padding_mask(lengths, t):
    kj = torch.arange(t, device=lengths.device).unsqueeze(0)
    return kj < lengths.unsqueeze(1)


def attention_mask(lengths, t, causal=False):
    B = lengths.size(0)
    out = padding_mask(lengths, t).reshape(B, 1, 1, t).expand(B, 1, t, t)
    if causal:
        out = out & causal_mask(t, device=lengths.device).reshape(1, 1, t, t)
    return out
