import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    off = Tk - Tq

    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d)
    ones = torch.ones(Tq, Tk, dtype=torch.bool, device=q.device)
    keep = ones.tril(off) & ones.triu(off - window + 1)
    scores = scores.masked_fill(~keep, float("-inf"))

    if sinks is None:
        probs = torch.softmax(scores, dim=-1)
    else:
        sink_col = sinks.view(1, H, 1, 1).expand(B, H, Tq, 1)
        probs = torch.cat([torch.softmax(scores, dim=-1), sink_col], dim=-1)  # MISTAKE
        probs = probs[..., :Tk]

    return probs @ v, probs
