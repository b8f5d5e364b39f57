import math

import torch
import torch.nn.functional as F


def _window_mask(Tq, Tk, window, device):
    i = torch.arange(Tq, device=device).view(-1, 1)  # MISTAKE
    j = torch.arange(Tk, device=device).view(1, -1)
    dist = i - j
    return (dist >= 0) & (dist < window)


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    mask = _window_mask(Tq, Tk, window, q.device)
    logits = (q @ k.transpose(-1, -2)) / math.sqrt(d)
    logits = logits.masked_fill(~mask, float("-inf"))
    if sinks is None:
        probs = F.softmax(logits, dim=-1)
    else:
        sink = sinks[None, :, None, None].expand(B, H, Tq, 1)
        probs = F.softmax(torch.cat([logits, sink], dim=-1), dim=-1)[..., :-1]
    return probs @ v, probs
