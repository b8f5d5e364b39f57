import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    Tq, Tk = q.shape[-2], k.shape[-2]
    off = Tk - Tq
    s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1])

    ones = torch.ones(Tq, Tk, dtype=torch.bool, device=q.device)
    # keys up to the query's own position, minus the keys `window` or more behind it
    keep = ones.tril(off) & ~ones.tril(off - window)
    s = s.masked_fill(~keep, float("-inf"))

    # normaliser over the keys and, if any, the sink logit of the row's head
    lse = torch.logsumexp(s, dim=-1, keepdim=True)  # (B, H, Tq, 1)
    if sinks is not None:
        sink = sinks.view(1, -1, 1, 1).expand_as(lse)
        lse = torch.logaddexp(lse, sink)
    p = torch.exp(s - lse)
    return p @ v, p
