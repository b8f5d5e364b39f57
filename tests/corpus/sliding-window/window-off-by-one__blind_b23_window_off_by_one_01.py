import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    past = Tk - Tq

    ones = torch.ones(Tq, Tk, dtype=torch.bool, device=q.device)
    causal = torch.tril(ones, diagonal=past)
    too_old = torch.tril(ones, diagonal=past - window - 1)  # MISTAKE
    mask = causal & ~too_old

    scores = q @ k.transpose(-2, -1) / math.sqrt(d)
    scores = scores.masked_fill(~mask, float("-inf"))
    if sinks is not None:
        scores = torch.cat([scores, sinks.view(1, H, 1, 1).expand(B, H, Tq, 1)], dim=-1)
    probs = torch.softmax(scores, dim=-1)
    weights = probs[..., :Tk]
    return weights @ v, weights
