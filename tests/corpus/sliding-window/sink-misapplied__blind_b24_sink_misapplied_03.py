import math

import torch
import torch.nn.functional as F


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]

    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d)
    p = torch.arange(Tq, device=q.device).view(Tq, 1) + Tk - Tq
    j = torch.arange(Tk, device=q.device).view(1, Tk)
    scores = scores.masked_fill((j > p) | (j <= p - window), float("-inf"))

    if sinks is None:
        weights = F.softmax(scores, dim=-1)
    else:
        # the sink takes its share of the probability mass
        weights = F.softmax(scores, dim=-1) / (1 + sinks.exp().view(1, -1, 1, 1))  # MISTAKE

    return torch.matmul(weights, v), weights
