"""Zeroes the hidden keys' probabilities in place after the exp (p.mul_): exp's backward needs its output unchanged."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    lowest = torch.finfo(q.dtype).min
    m = torch.full((B, H, Tq, 1), lowest, dtype=q.dtype, device=q.device)
    l = torch.zeros_like(m)
    acc = torch.zeros_like(q)
    for j in range(0, Tk, block_size):
        s = q @ k[:, :, j:j + block_size].transpose(-2, -1) / math.sqrt(d)
        keep = None
        if causal:
            cols = torch.arange(j, j + s.shape[-1], device=q.device)
            keep = cols[None] <= torch.arange(Tq, device=q.device)[:, None] + Tk - Tq
            s = s.masked_fill(~keep, lowest)
        m_new = torch.maximum(m, s.amax(-1, keepdim=True))
        p = torch.exp(s - m_new)
        if keep is not None:
            p.mul_(keep)
        a = torch.exp(m - m_new)
        l = a * l + p.sum(-1, keepdim=True)
        acc = a * acc + p @ v[:, :, j:j + block_size]
        m = m_new
    return acc / l.clamp_min(1e-30)
