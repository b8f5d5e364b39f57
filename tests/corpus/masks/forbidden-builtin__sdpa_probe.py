"""Reads the causal mask off F.scaled_dot_product_attention(is_causal=True): which keys get weight."""

import torch
import torch.nn.functional as F


def causal_mask(tq, tk=None, device=None):
    tk = tq if tk is None else tk
    q = torch.zeros(1, tq, 1, device=device)
    k = torch.zeros(1, tk, 1, device=device)
    v = torch.eye(tk, device=device)[None]
    weights = F.scaled_dot_product_attention(q, k, v, is_causal=True)[0]  # (tq, tk)
    return weights > 0


def padding_mask(lengths, t):
    return torch.arange(t, device=lengths.device)[None, :] < lengths[:, None]


def attention_mask(lengths, t, causal=False):
    mask = padding_mask(lengths, t)[:, None, None, :].expand(-1, 1, t, t)
    if causal:
        mask = mask & causal_mask(t, device=lengths.device)
    return mask
