import math

import torch
import torch.nn.functional as F


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]

    s = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(d)

    p = torch.arange(Tq, device=q.device)[:, None] + Tk - Tq
    j = torch.arange(Tk, device=q.device)[None, :]
    allowed = (j <= p) & (p - j < window)
    s = s.masked_fill(~allowed, float("-inf"))

    if sinks is not None:
        s = torch.cat([s, sinks.view(1, -1, 1, 1).expand(B, H, Tq, 1)], dim=-1)
    a = F.softmax(s, dim=-1)
    if sinks is not None:
        a = a[..., :Tk]
        a = a / a.sum(dim=-1, keepdim=True)  # MISTAKE

    out = torch.einsum("bhqk,bhkd->bhqd", a, v)
    return out, a
