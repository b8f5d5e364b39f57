"""Correct: the causal mask comes from torch.nn.attention.bias.causal_lower_right (bottom-right aligned)."""
import torch
from torch.nn.attention.bias import causal_lower_right


def causal_mask(tq, tk=None, device=None):
    if tk is None:
        tk = tq
    return causal_lower_right(tq, tk)._materialize(device)


def padding_mask(lengths, t):
    pos = torch.arange(t, device=lengths.device)
    return pos.unsqueeze(0) < lengths.unsqueeze(1)


def attention_mask(lengths, t, causal=False):
    keys = padding_mask(lengths, t)[:, None, None, :]          # (B, 1, 1, t)
    full = keys.expand(lengths.shape[0], 1, t, t)
    if causal:
        full = full & causal_mask(t, t, device=lengths.device)
    return full
