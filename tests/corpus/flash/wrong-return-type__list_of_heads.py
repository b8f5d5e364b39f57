"""Processes each (batch, head) separately and returns the Python list of results, never stacked."""

import math

import torch


def one(q, k, v, causal, bs):
    Tq, Tk = q.shape[0], k.shape[0]
    m = torch.full((Tq, 1), -math.inf, dtype=q.dtype, device=q.device)
    l = torch.zeros_like(m)
    acc = torch.zeros_like(q)
    for j in range(0, Tk, bs):
        s = q @ k[j:j + bs].T / math.sqrt(q.shape[1])
        if causal:
            cols = torch.arange(j, j + s.shape[1], device=q.device)
            hide = cols[None] > torch.arange(Tq, device=q.device)[:, None] + Tk - Tq
            s = s.masked_fill(hide, -math.inf)
        m_new = torch.maximum(m, s.amax(1, keepdim=True))
        z = torch.where(m_new.isinf(), 0.0, m_new)
        p, a = torch.exp(s - z), torch.exp(m - z)
        l = a * l + p.sum(1, keepdim=True)
        acc = a * acc + p @ v[j:j + bs]
        m = m_new
    return acc / l.clamp_min(1e-30)


def flash_attention(q, k, v, causal=False, block_size=64):
    return [one(q[b, h], k[b, h], v[b, h], causal, block_size) for b in range(q.shape[0]) for h in range(q.shape[1])]
