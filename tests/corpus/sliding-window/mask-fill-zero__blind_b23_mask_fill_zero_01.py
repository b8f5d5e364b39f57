import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    offset = Tk - Tq

    i = torch.arange(Tq, device=q.device).view(Tq, 1) + offset
    j = torch.arange(Tk, device=q.device).view(1, Tk)
    allowed = (j <= i) & (j >= i - window + 1)

    scores = q @ k.transpose(-1, -2) / math.sqrt(d)
    scores = scores * allowed  # MISTAKE

    if sinks is not None:
        scores = torch.cat([scores, sinks.view(1, H, 1, 1).expand(B, H, Tq, 1)], dim=-1)
    weights = torch.softmax(scores, dim=-1)[..., :Tk]
    return weights @ v, weights
