import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]

    scores = q @ k.transpose(-1, -2) * (1.0 / math.sqrt(d))
    if sinks is not None:
        scores = scores + sinks[None, :, None, None]  # MISTAKE

    i = torch.arange(Tq, device=q.device).view(-1, 1) + (Tk - Tq)
    j = torch.arange(Tk, device=q.device).view(1, -1)
    mask = (j <= i) & (j > i - window)
    scores = scores.masked_fill(~mask, float("-inf"))

    weights = scores.softmax(dim=-1)
    out = weights @ v
    return out, weights
