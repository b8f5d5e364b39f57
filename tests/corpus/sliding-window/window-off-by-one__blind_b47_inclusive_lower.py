import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(d)

    qpos = torch.arange(Tk - Tq, Tk, device=q.device).view(Tq, 1)  # absolute query positions
    kpos = torch.arange(Tk, device=q.device).view(1, Tk)
    in_window = (kpos <= qpos) & (kpos >= qpos - window)  # MISTAKE: >= lets window + 1 keys through
    scores = scores.masked_fill(~in_window, float("-inf"))

    if sinks is not None:
        sink_col = sinks.view(1, H, 1, 1).expand(B, H, Tq, 1)
        probs = torch.softmax(torch.cat([scores, sink_col], dim=-1), dim=-1)[..., :-1]
    else:
        probs = torch.softmax(scores, dim=-1)
    return torch.einsum("bhqk,bhkd->bhqd", probs, v), probs
