import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(d)

    qpos = torch.arange(Tk - Tq, Tk, device=q.device)
    kpos = torch.arange(Tk, device=q.device)
    delta = qpos[:, None] - kpos[None, :]
    scores = scores.masked_fill((delta < 0) | (delta >= window), float("-inf"))

    if sinks is not None:
        sink_logit = sinks.view(1, H, 1, 1).expand(B, H, Tq, 1)
        scores = torch.cat([scores, sink_logit], dim=-1)
    probs = torch.softmax(scores, dim=-1)
    out = probs[..., :Tk] @ v
    return out, probs  # MISTAKE
