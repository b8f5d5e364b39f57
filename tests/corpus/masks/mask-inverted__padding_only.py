"""The causal mask is right, but padding_mask returns True for the padded keys, and attention_mask uses it."""

import torch


def causal_mask(tq, tk=None, device=None):
    tk = tq if tk is None else tk
    i = torch.arange(tq, device=device).view(-1, 1)
    j = torch.arange(tk, device=device).view(1, -1)
    return j - i <= tk - tq


def padding_mask(lengths, t):
    j = torch.arange(t, device=lengths.device)
    return ~(j < lengths.unsqueeze(-1))  # "is padding"


def attention_mask(lengths, t, causal=False):
    pad = padding_mask(lengths, t)  # True = padding
    mask = pad[:, None, None, :].expand(len(lengths), 1, t, t)
    if causal:
        mask = mask | ~causal_mask(t, t, device=lengths.device)
    return mask
