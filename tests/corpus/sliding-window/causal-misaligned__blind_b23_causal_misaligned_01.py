import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(d)

    i = torch.arange(Tq, device=q.device).unsqueeze(1)
    j = torch.arange(Tk, device=q.device).unsqueeze(0)
    mask = (j <= i) & (j > i - window)  # MISTAKE
    scores = scores.masked_fill(~mask, float("-inf"))

    if sinks is not None:
        s = sinks.view(1, H, 1, 1).expand(B, H, Tq, 1)
        scores = torch.cat([scores, s], dim=-1)
    attn = torch.softmax(scores, dim=-1)[..., :Tk]
    out = torch.einsum("bhqk,bhkd->bhqd", attn, v)
    return out, attn
