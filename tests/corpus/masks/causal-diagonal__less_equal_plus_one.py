"""Compares j <= i + 1 + (tk - tq) ("positions start at 1"): every query sees one key in its future."""

import torch


def causal_mask(tq, tk=None, device=None):
    if tk is None:
        tk = tq
    q = torch.arange(1, tq + 1, device=device)[:, None]
    k = torch.arange(tk, device=device)[None, :]
    return k <= q + (tk - tq)


def padding_mask(lengths, t):
    k = torch.arange(t, device=lengths.device)
    return k.expand(len(lengths), t) < lengths.view(-1, 1)


def attention_mask(lengths, t, causal=False):
    mask = padding_mask(lengths, t).view(-1, 1, 1, t).repeat(1, 1, t, 1)
    if causal:
        mask &= causal_mask(t, t, device=lengths.device)
    return mask
