"""Multiplies the scores by sqrt(d) where it should divide."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H, Tq, d = q.size()
    Tk = k.size(2)
    neg = torch.finfo(q.dtype).min
    mx = torch.full((B, H, Tq, 1), neg, dtype=q.dtype, device=q.device)
    den = torch.zeros(B, H, Tq, 1, dtype=q.dtype, device=q.device)
    num = torch.zeros(B, H, Tq, d, dtype=q.dtype, device=q.device)
    for j in range(0, Tk, block_size):
        s = torch.matmul(q, k[:, :, j:j + block_size].transpose(2, 3)) * math.sqrt(d)
        if causal:
            cols = torch.arange(j, j + s.size(-1), device=q.device)[None, :]
            ok = cols <= torch.arange(Tq, device=q.device)[:, None] + Tk - Tq
            s = torch.where(ok, s, neg)
        new = torch.maximum(mx, s.amax(-1, keepdim=True))
        p = torch.exp(s - new)
        if causal:
            p = p * ok
        f = torch.exp(mx - new)
        den = den * f + p.sum(-1, keepdim=True)
        num = num * f + p @ v[:, :, j:j + block_size]
        mx = new
    return num / den
