import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]

    scores = q @ k.transpose(-2, -1) / math.sqrt(d)

    # absolute positions: queries are the last Tq of the Tk positions
    pos_q = torch.arange(Tq, device=q.device) + (Tk - Tq)
    pos_k = torch.arange(Tk, device=q.device)
    rel = pos_q[:, None] - pos_k[None, :]
    allowed = (rel >= 0) & (rel < window)
    scores = scores.masked_fill(~allowed, float("-inf"))

    if sinks is not None:
        sink_col = sinks.view(1, H, 1, 1).expand(B, H, Tq, 1).to(scores.dtype)
        scores = torch.cat([scores, sink_col], dim=-1)

    probs = torch.softmax(scores, dim=-1)
    if sinks is not None:
        probs = probs[..., :-1]  # drop the sink column

    out = probs @ v
    return out, probs
