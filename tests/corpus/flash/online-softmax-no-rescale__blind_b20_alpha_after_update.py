"""Flash attention with the usual running max / running sum / accumulator. Mistake: the running max is
overwritten before the correction factor is computed, so alpha = exp(m - m_new) is always exp(0) = 1
and neither the accumulator nor the sum is ever rescaled when a later block raises the max; right only
when the whole key range fits in one block."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    scale = 1 / math.sqrt(d)
    m = torch.full((B, H, Tq, 1), -float("inf"), dtype=q.dtype, device=q.device)
    l = torch.zeros((B, H, Tq, 1), dtype=q.dtype, device=q.device)
    acc = torch.zeros_like(q)
    q_pos = torch.arange(Tq, device=q.device)[:, None] + (Tk - Tq)
    for start in range(0, Tk, block_size):
        kb = k[:, :, start:start + block_size]
        vb = v[:, :, start:start + block_size]
        s = (q @ kb.transpose(-1, -2)) * scale
        if causal:
            k_pos = torch.arange(start, start + kb.shape[2], device=q.device)[None, :]
            s = s.masked_fill(k_pos > q_pos, -float("inf"))
        m_new = torch.maximum(m, s.max(dim=-1, keepdim=True).values)
        p = torch.exp(s - m_new)
        m = m_new
        alpha = torch.exp(m - m_new)  # MISTAKE
        l = l * alpha + p.sum(dim=-1, keepdim=True)
        acc = acc * alpha + p @ vb
    return acc / l
