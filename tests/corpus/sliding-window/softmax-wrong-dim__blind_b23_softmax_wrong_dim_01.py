import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.size(-2)
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d)

    q_idx = torch.arange(Tk - Tq, Tk, device=q.device).unsqueeze(-1)
    k_idx = torch.arange(Tk, device=q.device).unsqueeze(0)
    in_win = (k_idx <= q_idx) & (k_idx > q_idx - window)
    scores = scores.masked_fill(~in_win, float("-inf"))

    if sinks is not None:
        sink = sinks.view(1, H, 1, 1).expand(B, H, Tq, 1)
        scores = torch.cat([scores, sink], dim=-1)
    probs = torch.softmax(scores, dim=-2)  # MISTAKE
    weights = probs[..., :Tk]
    out = torch.matmul(weights, v)
    return out, weights
