import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    Tq, Tk = q.size(-2), k.size(-2)
    d = q.size(-1)
    att = q @ k.transpose(-2, -1) * (1.0 / math.sqrt(d))

    i = torch.arange(Tq, device=q.device)[:, None] + (Tk - Tq)
    j = torch.arange(Tk, device=q.device)[None, :]
    band = (i - j).abs() < window  # MISTAKE: |i - j| also lets the next window - 1 keys through
    att = att.masked_fill(band.logical_not(), float("-inf"))

    m = att.amax(dim=-1, keepdim=True)
    if sinks is not None:
        sink = sinks.reshape(1, -1, 1, 1)
        m = torch.maximum(m, sink)
    e = torch.exp(att - m)
    denom = e.sum(dim=-1, keepdim=True)
    if sinks is not None:
        denom = denom + torch.exp(sink - m)
    w = e / denom
    return w @ v, w
