"""Divides the scores by d instead of sqrt(d)."""

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    *lead, Tq, d = q.shape
    Tk = k.shape[-2]
    q = q / d
    m = q.new_full((*lead, Tq, 1), float("-inf"))
    l = q.new_zeros((*lead, Tq, 1))
    acc = q.new_zeros((*lead, Tq, d))
    for j in range(0, Tk, block_size):
        s = q @ k[..., j:j + block_size, :].mT
        if causal:
            cols = torch.arange(j, j + s.shape[-1], device=q.device)
            hide = cols[None] > torch.arange(Tq, device=q.device)[:, None] + (Tk - Tq)
            s = s.masked_fill(hide, float("-inf"))
        m_new = torch.maximum(m, s.amax(-1, keepdim=True))
        m_safe = torch.nan_to_num(m_new, neginf=0.0)
        p = (s - m_safe).exp()
        c = (m - m_safe).exp()
        l = c * l + p.sum(-1, keepdim=True)
        acc = c * acc + p @ v[..., j:j + block_size, :]
        m = m_new
    return acc / l.clamp_min(1e-30)
