"""A correct online softmax, but the causal mask is built once for all (Tq, Tk) pairs and sliced per block."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    allowed = torch.ones(Tq, Tk, dtype=torch.bool, device=q.device).tril(diagonal=Tk - Tq)
    m = torch.full((B, H, Tq, 1), -math.inf, dtype=q.dtype, device=q.device)
    l = torch.zeros_like(m)
    acc = torch.zeros_like(q)
    for j in range(0, Tk, block_size):
        s = q @ k[:, :, j:j + block_size].transpose(-1, -2) / math.sqrt(d)
        if causal:
            s = s.masked_fill(~allowed[:, j:j + block_size], -math.inf)
        m_new = torch.maximum(m, s.amax(-1, keepdim=True))
        shift = torch.where(m_new.isinf(), 0.0, m_new)
        p = torch.exp(s - shift)
        a = torch.exp(m - shift)
        l = a * l + p.sum(-1, keepdim=True)
        acc = a * acc + p @ v[:, :, j:j + block_size]
        m = m_new
    return acc / l.clamp_min(1e-30)
