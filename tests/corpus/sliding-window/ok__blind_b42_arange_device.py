"""Sliding-window attention with sinks whose position indices are made with device=q.device and whose sink column is made with expand on the sinks' own (input) device."""
import math

import torch


def sliding_window_attention(q, k, v, window: int, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    p = torch.arange(Tq, device=q.device).unsqueeze(-1) + (Tk - Tq)
    j = torch.arange(Tk, device=q.device).unsqueeze(0)
    allowed = (j <= p) & (j > p - window)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)
    scores = scores.masked_fill(~allowed, float("-inf"))
    if sinks is not None:
        sink_col = sinks.to(scores.dtype).view(1, H, 1, 1).expand(B, H, Tq, 1)
        full = torch.cat([scores, sink_col], dim=-1)
        probs = torch.softmax(full, dim=-1)
        weights = probs[..., :Tk]
    else:
        weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
