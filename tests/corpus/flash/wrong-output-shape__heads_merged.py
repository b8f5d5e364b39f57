"""Merges the heads into one feature axis: returns (B, Tq, H * d)."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    m = torch.full((B, H, Tq, 1), -math.inf, dtype=q.dtype, device=q.device)
    l = torch.zeros_like(m)
    acc = torch.zeros_like(q)
    for j in range(0, Tk, block_size):
        s = q @ k[:, :, j:j + block_size].transpose(-2, -1) / math.sqrt(d)
        if causal:
            cols = torch.arange(j, j + s.shape[-1], device=q.device)
            hide = cols[None] > torch.arange(Tq, device=q.device)[:, None] + Tk - Tq
            s = s.masked_fill(hide, -math.inf)
        m_new = torch.maximum(m, s.amax(-1, keepdim=True))
        z = torch.where(m_new.isinf(), 0.0, m_new)
        p, a = torch.exp(s - z), torch.exp(m - z)
        l = a * l + p.sum(-1, keepdim=True)
        acc = a * acc + p @ v[:, :, j:j + block_size]
        m = m_new
    return (acc / torch.where(l == 0, 1.0, l)).transpose(1, 2).reshape(B, Tq, H * d)
