"""Masks with 1-based key positions from a cumsum. Mistake: with positions counted 1..t, "key inside
the sequence" is pos <= length, but the code keeps pos < length, dropping the last real key of every
sequence (one key too few). The causal mask is right; attention_mask inherits the padding error."""

import torch


def causal_mask(tq, tk=None, device=None):
    tk = tk or tq
    rows = torch.arange(tq, device=device).view(-1, 1) + (tk - tq)
    cols = torch.arange(tk, device=device).view(1, -1)
    return cols <= rows


def padding_mask(lengths, t):
    pos = torch.ones(lengths.numel(), t, dtype=torch.int64, device=lengths.device).cumsum(-1)
    return pos < lengths[:, None]  # MISTAKE


def attention_mask(lengths, t, causal=False):
    mask = padding_mask(lengths, t).unsqueeze(1).unsqueeze(1)
    mask = mask.expand(lengths.numel(), 1, t, t)
    if causal:
        mask = mask & causal_mask(t, device=lengths.device)
    return mask
