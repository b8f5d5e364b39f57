import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]

    scores = torch.einsum("bhqd,bhkd->bhqk", q, k)  # MISTAKE

    i = torch.arange(Tq, device=q.device)[:, None] + (Tk - Tq)
    j = torch.arange(Tk, device=q.device)[None, :]
    mask = (j <= i) & (j > i - window)
    scores = scores.masked_fill(~mask, float("-inf"))

    if sinks is not None:
        scores = torch.cat([scores, sinks.view(1, H, 1, 1).expand(B, H, Tq, 1)], dim=-1)
    weights = torch.softmax(scores, dim=-1)
    if sinks is not None:
        weights = weights[..., :Tk]
    weights = weights / math.sqrt(d)

    out = torch.einsum("bhqk,bhkd->bhqd", weights, v)
    return out, weights
