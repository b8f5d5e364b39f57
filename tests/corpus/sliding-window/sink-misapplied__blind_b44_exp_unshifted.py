import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    rows = torch.arange(Tq, device=q.device)[:, None] + (Tk - Tq)
    cols = torch.arange(Tk, device=q.device)[None, :]
    visible = (cols <= rows) & (cols > rows - window)
    s = (q @ k.transpose(-2, -1)) / math.sqrt(d)
    s = s.masked_fill(~visible, float("-inf"))
    row_max = s.amax(dim=-1, keepdim=True)
    e = torch.exp(s - row_max)
    denom = e.sum(dim=-1, keepdim=True)
    if sinks is not None:
        denom = denom + torch.exp(sinks.view(1, H, 1, 1))  # MISTAKE
    w = e / denom
    return w @ v, w
