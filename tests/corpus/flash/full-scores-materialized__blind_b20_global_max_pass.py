"""Flash attention in two passes: a first pass takes each row's max score so that the block loop never
has to rescale, and a second pass accumulates exp(s - max) and its sum block by block. The output is
right. Mistake: the first pass computes q @ k^T for all keys at once, a full (Tq, Tk) score matrix,
which is exactly what flash attention must never create."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    scale = 1.0 / math.sqrt(d)
    row_max = (q @ k.transpose(-2, -1)).amax(dim=-1, keepdim=True) * scale  # MISTAKE
    num = torch.zeros(B, H, Tq, v.shape[-1], dtype=q.dtype, device=q.device)
    den = torch.zeros(B, H, Tq, 1, dtype=q.dtype, device=q.device)
    last = torch.arange(Tq, device=q.device)[:, None] + Tk - Tq
    for j in range(0, Tk, block_size):
        kb, vb = k[:, :, j:j + block_size], v[:, :, j:j + block_size]
        s = q @ kb.transpose(-2, -1) * scale
        if causal:
            s = s.masked_fill(torch.arange(j, j + kb.shape[2], device=q.device)[None] > last, float("-inf"))
        p = torch.exp(s - row_max)
        den = den + p.sum(-1, keepdim=True)
        num = num + p @ vb
    return num / den
