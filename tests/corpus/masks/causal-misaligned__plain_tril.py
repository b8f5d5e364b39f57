"""tril with no offset: top-left aligned, like SDPA's is_causal=True; wrong as soon as tq != tk."""

import torch


def causal_mask(tq, tk=None, device=None):
    tk = tk or tq
    return torch.ones(tq, tk, device=device).tril().bool()


def padding_mask(lengths, t):
    return torch.arange(t, device=lengths.device)[None] < lengths[:, None]


def attention_mask(lengths, t, causal=False):
    mask = padding_mask(lengths, t)[:, None, None]
    if causal:
        mask = mask & causal_mask(t, t, device=lengths.device)
    return mask.expand(-1, 1, t, t)
