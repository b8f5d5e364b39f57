"""The causal test uses the key index inside the block (arange(ke - ks)) instead of its global index ks + j.
"""
import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    scale = 1.0 / math.sqrt(d)
    offset = Tk - Tq
    out = torch.empty_like(q)
    for qs in range(0, Tq, block_size):
        qe = min(qs + block_size, Tq)
        qb = q[:, :, qs:qe] * scale
        m = torch.full((B, H, qe - qs, 1), float("-inf"), dtype=q.dtype, device=q.device)
        l = torch.zeros((B, H, qe - qs, 1), dtype=q.dtype, device=q.device)
        acc = torch.zeros((B, H, qe - qs, d), dtype=q.dtype, device=q.device)
        for ks in range(0, Tk, block_size):
            ke = min(ks + block_size, Tk)
            s = qb @ k[:, :, ks:ke].transpose(-2, -1)
            if causal:
                qi = torch.arange(qs, qe, device=q.device)[:, None] + offset
                kj = torch.arange(ke - ks, device=q.device)[None, :]
                s = s.masked_fill(kj > qi, float("-inf"))
            m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
            m_safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
            p = torch.exp(s - m_safe)
            alpha = torch.exp(m - m_safe)
            l = l * alpha + p.sum(dim=-1, keepdim=True)
            acc = acc * alpha + p @ v[:, :, ks:ke]
            m = m_new
        out[:, :, qs:qe] = acc / l
    return out
