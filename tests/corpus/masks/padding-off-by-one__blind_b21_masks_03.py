"""Exercise masks: causal and padding masks."""

import torch


def causal_mask(tq, tk=None, device=None):
    tk = tq if tk is None else tk
    q_pos = torch.arange(tk - tq, tk, device=device).view(tq, 1)  # absolute positions of the queries
    k_pos = torch.arange(tk, device=device).view(1, tk)
    return k_pos <= q_pos


def padding_mask(lengths, t):
    B = lengths.shape[0]
    pos = torch.arange(1, t + 1, device=lengths.device).unsqueeze(0).expand(B, -1)  # 1-based positions
    return pos < lengths.unsqueeze(1)  # MISTAKE


def attention_mask(lengths, t, causal=False):
    mask = padding_mask(lengths, t).unsqueeze(1).unsqueeze(2)  # (B, 1, 1, t)
    if causal:
        mask = mask & causal_mask(t, device=lengths.device)
    else:
        mask = mask.expand(-1, -1, t, -1)
    return mask
