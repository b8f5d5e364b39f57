"""tril/triu with a diagonal one too high: window - 1 keys."""

import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.size(-2)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)
    pos = torch.arange(Tq, device=q.device)[:, None] + (Tk - Tq)
    key = torch.arange(Tk, device=q.device)[None, :]
    ones = torch.ones(Tq, Tk, dtype=torch.bool, device=q.device)
    allowed = ones.tril(Tk - Tq) & ones.triu(Tk - Tq - window + 2)
    scores = scores.masked_fill(~allowed, float("-inf"))
    if sinks is not None:
        col = sinks.view(1, H, 1, 1).expand(B, H, Tq, 1)
        scores = torch.cat([scores, col], dim=-1)
    probs = torch.softmax(scores, dim=-1)
    weights = probs[..., :Tk]
    out = weights @ v
    return out, weights
