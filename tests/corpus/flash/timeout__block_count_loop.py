"""Counts the blocks with a while loop whose step is computed but never assigned: spins forever, pure Python."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    Tq, Tk = q.shape[-2], k.shape[-2]
    n_blocks, pos = 0, 0
    while pos < Tk:
        n_blocks += 1
        pos + block_size  # meant pos += block_size
    m = torch.full(q.shape[:-1] + (1,), -math.inf, dtype=q.dtype, device=q.device)
    l = torch.zeros_like(m)
    acc = torch.zeros_like(q)
    for b in range(n_blocks):
        j = b * block_size
        s = q @ k[..., j:j + block_size, :].transpose(-2, -1) / math.sqrt(q.shape[-1])
        if causal:
            cols = torch.arange(j, j + s.shape[-1], device=q.device)
            hide = cols[None] > torch.arange(Tq, device=q.device)[:, None] + Tk - Tq
            s = s.masked_fill(hide, -math.inf)
        m_new = torch.maximum(m, s.amax(-1, keepdim=True))
        z = torch.where(m_new.isinf(), 0.0, m_new)
        p, a = torch.exp(s - z), torch.exp(m - z)
        l = a * l + p.sum(-1, keepdim=True)
        acc = a * acc + p @ v[..., j:j + block_size, :]
        m = m_new
    return acc / l.clamp_min(1e-30)
