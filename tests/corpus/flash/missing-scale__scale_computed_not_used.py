"""Per-head loops; computes the scale but applies it to the key block after the scores were already taken."""

import math

import torch


def attend(q, k, v, causal, bs):
    Tq, d = q.shape
    Tk = k.shape[0]
    scale = 1.0 / math.sqrt(d)
    m = torch.full((Tq,), -math.inf, dtype=q.dtype, device=q.device)
    l = torch.zeros(Tq, dtype=q.dtype, device=q.device)
    o = torch.zeros(Tq, d, dtype=q.dtype, device=q.device)
    for j in range(0, Tk, bs):
        kb = k[j:j + bs]
        s = torch.einsum("id,jd->ij", q, kb)
        kb = kb * scale  # meant: s = s * scale
        if causal:
            i = torch.arange(Tq, device=q.device)[:, None] + Tk - Tq
            s = torch.where(torch.arange(j, j + kb.shape[0], device=q.device)[None, :] <= i, s, -math.inf)
        m_new = torch.maximum(m, s.max(1).values)
        z = torch.where(torch.isfinite(m_new), m_new, torch.zeros_like(m_new))
        p = torch.exp(s - z[:, None])
        r = torch.exp(m - z)
        l = l * r + p.sum(1)
        o = o * r[:, None] + p @ v[j:j + bs]
        m = m_new
    return o / torch.where(l > 0, l, torch.ones_like(l))[:, None]


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H = q.shape[:2]
    return torch.stack([torch.stack([attend(q[b, h], k[b, h], v[b, h], causal, block_size) for h in range(H)])
                        for b in range(B)])
