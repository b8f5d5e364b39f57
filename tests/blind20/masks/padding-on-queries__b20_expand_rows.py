"""Masks: causal via an index comparison, padding via arange. In attention_mask the (B, t) padding
mask is given a trailing axis and expanded "over the keys". Mistake: pad[:, :, None] puts the padding
on the query axis, so padded query rows are hidden and every key column stays visible."""

import torch


def causal_mask(tq, tk=None, device=None):
    tk = tq if tk is None else tk
    q_pos = torch.arange(tk - tq, tk, device=device)
    k_pos = torch.arange(tk, device=device)
    return k_pos[None, :] <= q_pos[:, None]


def padding_mask(lengths, t):
    return torch.arange(t, device=lengths.device)[None] < lengths[:, None]


def attention_mask(lengths, t, causal=False):
    pad = padding_mask(lengths, t)
    grid = pad[:, :, None].expand(-1, t, t)  # MISTAKE
    if causal:
        grid = grid & causal_mask(t, device=lengths.device)
    return grid.unsqueeze(1)
