"""Consistently uses True = "ignore this key" (nn.MultiheadAttention's key_padding_mask convention)."""
import torch


def causal_mask(tq, tk=None, device=None):
    tk = tk or tq
    q = torch.arange(tq, device=device).unsqueeze(1)
    k = torch.arange(tk, device=device).unsqueeze(0)
    return k > q + (tk - tq)


def padding_mask(lengths, t):
    return torch.arange(t, device=lengths.device).unsqueeze(0) >= lengths.unsqueeze(1)


def attention_mask(lengths, t, causal=False):
    pad = padding_mask(lengths, t).unsqueeze(1).unsqueeze(2).expand(-1, 1, t, t)
    if causal:
        pad = pad | causal_mask(t, device=lengths.device)
    return pad
