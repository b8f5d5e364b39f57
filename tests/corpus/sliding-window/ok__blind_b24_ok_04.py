import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.size(-2)
    off = Tk - Tq

    ones = torch.ones(Tq, Tk, dtype=torch.bool, device=q.device)
    keep = torch.tril(ones, diagonal=off) & torch.triu(ones, diagonal=off - window + 1)
    bias = torch.zeros(Tq, Tk, dtype=q.dtype, device=q.device).masked_fill(~keep, float("-inf"))

    logits = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(d)) + bias

    # softmax by hand, the sink joins the max and the denominator
    m = logits.amax(dim=-1, keepdim=True)
    if sinks is not None:
        m = torch.maximum(m, sinks.view(1, -1, 1, 1))
    e = torch.exp(logits - m)
    denom = e.sum(dim=-1, keepdim=True)
    if sinks is not None:
        denom = denom + torch.exp(sinks.view(1, -1, 1, 1) - m)
    attn = e / denom

    return attn @ v, attn
