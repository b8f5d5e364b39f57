import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]

    raw = torch.einsum("bhqd,bhkd->bhqk", q, k)

    i = torch.arange(Tq, device=q.device)[:, None] + (Tk - Tq)
    j = torch.arange(Tk, device=q.device)[None, :]
    allowed = (j <= i) & (j > i - window)
    raw = raw.masked_fill(~allowed, float("-inf"))

    if sinks is not None:
        raw = torch.cat([raw, sinks.view(1, H, 1, 1).expand(B, H, Tq, 1)], dim=-1)
    logits = raw / math.sqrt(d)  # MISTAKE

    probs = logits.softmax(dim=-1)[..., :Tk]
    out = torch.einsum("bhqk,bhkd->bhqd", probs, v)
    return out, probs
