"""The sink column joined before the scores are divided by sqrt(d)."""

import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.size(-2)
    scores = q @ k.transpose(-2, -1)
    pos = torch.arange(Tq, device=q.device)[:, None] + (Tk - Tq)
    key = torch.arange(Tk, device=q.device)[None, :]
    allowed = (key <= pos) & (key > pos - window)
    scores = scores.masked_fill(~allowed, float("-inf"))
    if sinks is not None:
        col = sinks.view(1, H, 1, 1).expand(B, H, Tq, 1)
        scores = torch.cat([scores, col], dim=-1)
    probs = torch.softmax(scores / math.sqrt(d), dim=-1)
    weights = probs[..., :Tk]
    out = weights @ v
    return out, weights
