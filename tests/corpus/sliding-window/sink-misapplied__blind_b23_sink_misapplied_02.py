import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d)

    i = torch.arange(Tq, device=q.device).unsqueeze(1) + (Tk - Tq)
    j = torch.arange(Tk, device=q.device).unsqueeze(0)
    allowed = (j <= i) & (j > i - window)
    scores = scores.masked_fill(~allowed, float("-inf"))

    # stable softmax, with the sink as an extra term in the denominator
    m = scores.amax(dim=-1, keepdim=True)
    e = torch.exp(scores - m)
    z = e.sum(dim=-1, keepdim=True)
    if sinks is not None:
        z = z + torch.exp(sinks).view(1, H, 1, 1)  # MISTAKE
    weights = e / z
    out = torch.matmul(weights, v)
    return out, weights
