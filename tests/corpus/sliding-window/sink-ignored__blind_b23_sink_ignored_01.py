import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)

    qpos = torch.arange(Tq, device=q.device).view(-1, 1) + Tk - Tq
    kpos = torch.arange(Tk, device=q.device).view(1, -1)
    mask = (kpos <= qpos) & (kpos > qpos - window)
    scores = scores.masked_fill(~mask, float("-inf"))

    if sinks is not None:
        scores = scores + sinks.view(1, -1, 1, 1)  # MISTAKE

    weights = torch.softmax(scores, dim=-1)
    out = weights @ v
    return out, weights
