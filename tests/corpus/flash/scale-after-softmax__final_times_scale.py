"""FA2 running stats over raw scores; the scale applied to the normalised output at the end."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    scale = 1 / math.sqrt(d)
    m = torch.full((B, H, Tq, 1), float("-inf"), dtype=q.dtype, device=q.device)
    l = torch.zeros((B, H, Tq, 1), dtype=q.dtype, device=q.device)
    o = torch.zeros_like(q)
    qi = torch.arange(Tq, device=q.device)[:, None] + (Tk - Tq)
    for j in range(0, Tk, block_size):
        kj = k[:, :, j:j + block_size]
        vj = v[:, :, j:j + block_size]
        s = torch.matmul(q, kj.transpose(2, 3))
        if causal:
            kj_idx = torch.arange(j, j + kj.shape[2], device=q.device)[None, :]
            s = s.masked_fill(kj_idx > qi, float("-inf"))
        m_new = torch.maximum(m, s.max(dim=-1, keepdim=True).values)
        m_safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
        p = torch.exp(s - m_safe)
        corr = torch.exp(m - m_safe)
        l = corr * l + p.sum(-1, keepdim=True)
        o = corr * o + p @ vj
        m = m_new
    return o / torch.where(l == 0, torch.ones_like(l), l) * scale
