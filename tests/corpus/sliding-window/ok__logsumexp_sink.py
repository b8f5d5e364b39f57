"""The softmax by hand: the sink folded into the log-normaliser with logaddexp."""

import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.size(-2)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)
    pos = torch.arange(Tq, device=q.device)[:, None] + (Tk - Tq)
    key = torch.arange(Tk, device=q.device)[None, :]
    allowed = (key <= pos) & (key > pos - window)
    scores = scores.masked_fill(~allowed, float("-inf"))
    lse = torch.logsumexp(scores, dim=-1, keepdim=True)
    if sinks is not None:
        lse = torch.logaddexp(lse, sinks.view(1, H, 1, 1))
    weights = torch.exp(scores - lse)
    out = weights @ v
    return out, weights
