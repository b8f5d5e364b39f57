import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    off = Tk - Tq

    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d)

    keep = torch.ones(Tq, Tk, device=q.device).tril(off).triu(off - window + 1)
    scores = scores * keep.to(scores.dtype)  # MISTAKE

    if sinks is not None:
        sink = sinks.view(1, H, 1, 1).expand(B, H, Tq, 1)
        scores = torch.cat([scores, sink], dim=-1)
    attn = torch.softmax(scores, dim=-1)
    if sinks is not None:
        attn = attn[..., :-1]
    return torch.matmul(attn, v), attn
