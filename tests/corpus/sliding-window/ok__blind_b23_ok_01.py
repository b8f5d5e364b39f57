import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d)

    # queries are the last Tq positions of the Tk keys
    q_pos = torch.arange(Tk - Tq, Tk, device=q.device).unsqueeze(-1)
    k_pos = torch.arange(Tk, device=q.device).unsqueeze(0)
    allowed = (k_pos <= q_pos) & (k_pos > q_pos - window)
    scores = scores.masked_fill(~allowed, float("-inf"))

    if sinks is not None:
        sink_col = sinks.view(1, H, 1, 1).expand(B, H, Tq, 1).to(scores.dtype)
        scores = torch.cat([scores, sink_col], dim=-1)

    probs = torch.softmax(scores, dim=-1)
    weights = probs[..., :Tk]
    out = weights @ v
    return out, weights
