"""Every mask converted to int64 ("0/1 is easier to print")."""

import torch


def causal_mask(tq, tk=None, device=None):
    tk = tq if tk is None else tk
    keep = torch.arange(tk, device=device)[None, :] <= torch.arange(tq, device=device)[:, None] + (tk - tq)
    return keep.long()


def padding_mask(lengths, t):
    return (torch.arange(t, device=lengths.device)[None, :] < lengths[:, None]).long()


def attention_mask(lengths, t, causal=False):
    mask = padding_mask(lengths, t)[:, None, None, :].expand(-1, 1, t, t)
    if causal:
        mask = mask * causal_mask(t, device=lengths.device)
    return mask
