"""Exercise masks: causal and padding masks."""

import torch


def causal_mask(tq, tk=None, device=None):
    if tk is None:
        tk = tq
    # 上三角 = 未来, 取反就是能看的部分
    future = torch.ones(tq, tk, dtype=torch.bool, device=device).triu(diagonal=tk - tq)  # MISTAKE
    return ~future


def padding_mask(lengths, t):
    idx = torch.arange(t, device=lengths.device)
    return idx.unsqueeze(0) < lengths.unsqueeze(1)


def attention_mask(lengths, t, causal=False):
    m = padding_mask(lengths, t)[:, None, None, :].expand(lengths.size(0), 1, t, t)
    if causal:
        m = m & causal_mask(t, t, device=lengths.device)[None, None]
    return m
