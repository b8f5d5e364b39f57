"""A loop over queries, each attending to its slice of keys; the sink joins as a column."""

import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    weights = q.new_zeros(B, H, Tq, Tk)
    for i in range(Tq):
        p = i + Tk - Tq
        lo = max(0, p - window + 1)
        s = (q[:, :, i:i + 1] @ k[:, :, lo:p + 1].transpose(-2, -1)) / math.sqrt(d)  # (B, H, 1, n)
        if sinks is not None:
            s = torch.cat([s, sinks.view(1, H, 1, 1).expand(B, H, 1, 1)], dim=-1)
        w = torch.softmax(s, dim=-1)[..., :p + 1 - lo]
        weights[:, :, i:i + 1, lo:p + 1] = w
    return weights @ v, weights
