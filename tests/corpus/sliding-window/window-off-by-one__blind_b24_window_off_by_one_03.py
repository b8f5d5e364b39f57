import math

import torch


def sliding_window_attention(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.size(-2)
    off = Tk - Tq

    ones = torch.ones(Tq, Tk, dtype=torch.bool, device=q.device)
    # lower edge of the band: no more than `window` back
    keep = torch.tril(ones, diagonal=off) & torch.triu(ones, diagonal=off - window + 2)  # MISTAKE

    logits = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d)
    logits = logits.masked_fill(~keep, float("-inf"))

    m = logits.amax(dim=-1, keepdim=True)
    if sinks is not None:
        m = torch.maximum(m, sinks.view(1, -1, 1, 1))
    e = torch.exp(logits - m)
    denom = e.sum(dim=-1, keepdim=True)
    if sinks is not None:
        denom = denom + torch.exp(sinks.view(1, -1, 1, 1) - m)
    attn = e / denom
    return attn @ v, attn
