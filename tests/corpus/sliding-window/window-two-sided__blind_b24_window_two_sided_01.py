import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]

    scores = q @ k.transpose(-2, -1) / math.sqrt(d)

    pos_q = torch.arange(Tq, device=q.device) + (Tk - Tq)
    pos_k = torch.arange(Tk, device=q.device)
    band = (pos_q[:, None] - pos_k[None, :]).abs() < window  # MISTAKE
    scores = scores.masked_fill(~band, float("-inf"))

    if sinks is not None:
        sink_col = sinks.view(1, H, 1, 1).expand(B, H, Tq, 1)
        scores = torch.cat([scores, sink_col], dim=-1)

    probs = torch.softmax(scores, dim=-1)
    if sinks is not None:
        probs = probs[..., :-1]
    return probs @ v, probs
