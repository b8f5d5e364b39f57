"""No max at all: sums exp(score) directly. Fine for small scores, inf / inf = NaN once they reach ~700."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    Tq, Tk = q.shape[-2], k.shape[-2]
    num = torch.zeros_like(q)
    den = torch.zeros_like(q[..., :1])
    for j in range(0, Tk, block_size):
        s = q @ k[..., j:j + block_size, :].transpose(-2, -1) / math.sqrt(q.shape[-1])
        if causal:
            cols = torch.arange(j, j + s.shape[-1], device=q.device)
            hide = cols[None] > torch.arange(Tq, device=q.device)[:, None] + (Tk - Tq)
            s = s.masked_fill(hide, -math.inf)
        e = torch.exp(s)
        num = num + e @ v[..., j:j + block_size, :]
        den = den + e.sum(-1, keepdim=True)
    return num / den
