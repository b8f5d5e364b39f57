import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]

    p = torch.arange(Tq, device=q.device)[:, None] + (Tk - Tq)
    j = torch.arange(Tk, device=q.device)[None, :]
    bias = torch.zeros(Tq, Tk, dtype=q.dtype, device=q.device)
    bias = bias.masked_fill((j > p) | (j <= p - window), float("-inf"))

    scores = q @ k.transpose(-2, -1) + bias  # MISTAKE
    if sinks is not None:
        scores = torch.cat([scores, sinks.view(1, H, 1, 1).expand(B, H, Tq, 1)], dim=-1)
    probs = torch.softmax(scores, dim=-1)[..., :Tk]
    probs = probs / math.sqrt(d)
    out = probs @ v
    return out, probs
