"""attention_mask puts the padding on the query rows (mask[b, 0, i, :] = i < len) instead of the key columns."""
import torch


def causal_mask(tq, tk=None, device=None):
    tk = tq if tk is None else tk
    return torch.arange(tk, device=device)[None, :] <= torch.arange(tq, device=device)[:, None] + (tk - tq)


def padding_mask(lengths, t):
    return torch.arange(t, device=lengths.device)[None, :] < lengths[:, None]


def attention_mask(lengths, t, causal=False):
    valid = padding_mask(lengths, t)                 # (B, t)
    m = valid[:, None, :, None].expand(-1, 1, t, t)  # (B, 1, t, t)
    if causal:
        m = m & causal_mask(t, device=lengths.device)
    return m
