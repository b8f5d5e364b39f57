"""attention_mask puts the padding on the query axis (mask[b, 0, i, :] = i < lengths[b])."""

import torch


def causal_mask(tq, tk=None, device=None):
    tk = tq if tk is None else tk
    return torch.ones(tq, tk, dtype=torch.bool, device=device).tril(diagonal=tk - tq)


def padding_mask(lengths, t):
    return torch.arange(t, device=lengths.device)[None, :] < lengths[:, None]


def attention_mask(lengths, t, causal=False):
    pad = padding_mask(lengths, t)  # (B, t)
    mask = pad[:, None, :, None].expand(-1, 1, t, t)  # (B, 1, t, 1): one flag per query row
    if causal:
        mask = mask & causal_mask(t, device=lengths.device)
    return mask
