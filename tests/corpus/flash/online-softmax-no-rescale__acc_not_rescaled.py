"""Rescales the running sum when the max grows, but adds each block to the output accumulator as it is."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    m = torch.full((B, H, Tq, 1), float("-inf"), dtype=q.dtype, device=q.device)
    l = torch.zeros((B, H, Tq, 1), dtype=q.dtype, device=q.device)
    acc = torch.zeros_like(q)
    rows = torch.arange(Tq, device=q.device)[:, None] + (Tk - Tq)
    for j in range(0, Tk, block_size):
        s = q @ k[:, :, j:j + block_size].transpose(-2, -1) / math.sqrt(d)
        if causal:
            s = s.masked_fill(torch.arange(j, j + s.shape[-1], device=q.device)[None, :] > rows, float("-inf"))
        m_new = torch.maximum(m, s.amax(-1, keepdim=True))
        safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
        p = torch.exp(s - safe)
        l = torch.exp(m - safe) * l + p.sum(-1, keepdim=True)
        acc = acc + p @ v[:, :, j:j + block_size]
        m = m_new
    return acc / l.clamp_min(1e-30)
