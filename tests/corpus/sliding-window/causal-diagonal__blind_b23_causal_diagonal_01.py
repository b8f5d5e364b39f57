import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    offset = Tk - Tq

    mask = torch.ones(Tq, Tk, dtype=torch.bool, device=q.device)
    mask = mask.tril(diagonal=offset - 1) & ~mask.tril(diagonal=offset - window - 1)  # MISTAKE

    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d)
    scores = scores.masked_fill(~mask, float("-inf"))
    if sinks is not None:
        sink = sinks.reshape(1, H, 1, 1).expand(B, H, Tq, 1)
        scores = torch.cat([scores, sink], dim=-1)
    weights = torch.softmax(scores, dim=-1)
    if sinks is not None:
        weights = weights[..., :-1]
    return torch.matmul(weights, v), weights
