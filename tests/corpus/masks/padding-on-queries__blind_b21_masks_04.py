"""Exercise masks: causal and padding masks."""

import torch


def causal_mask(tq, tk=None, device=None):
    if tk is None:
        tk = tq
    rows = torch.arange(tq, device=device).unsqueeze(1)
    cols = torch.arange(tk, device=device).unsqueeze(0)
    return (cols - rows) <= (tk - tq)


def padding_mask(lengths, t):
    return torch.arange(t, device=lengths.device)[None, :] < lengths[:, None]


def attention_mask(lengths, t, causal=False):
    pad = padding_mask(lengths, t)  # (B, t)
    m = pad.unsqueeze(1).unsqueeze(-1).expand(-1, 1, t, t)  # MISTAKE
    if causal:
        m = m & causal_mask(t, device=lengths.device)
    return m
