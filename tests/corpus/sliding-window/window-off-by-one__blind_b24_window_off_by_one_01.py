import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]

    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d)

    qi = torch.arange(Tq, device=q.device)[:, None] + Tk - Tq
    kj = torch.arange(Tk, device=q.device)[None, :]
    mask = (kj <= qi) & (kj >= qi - window)  # MISTAKE
    scores = scores.masked_fill(~mask, float("-inf"))

    if sinks is not None:
        sink = sinks.reshape(1, H, 1, 1).expand(B, H, Tq, 1)
        scores = torch.cat([scores, sink], dim=-1)

    attn = torch.softmax(scores, dim=-1)
    attn = attn[..., :Tk]
    return attn @ v, attn
