"""flash: einsum everywhere, running stats kept without the trailing 1 dim."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    b, h, n_q, d = q.shape
    n_k = k.shape[2]
    o = torch.zeros_like(q)
    m = torch.full((b, h, n_q), -float("inf"), dtype=q.dtype, device=q.device)
    l = torch.zeros((b, h, n_q), dtype=q.dtype, device=q.device)
    limit = torch.arange(n_q, device=q.device) + (n_k - n_q)  # last visible key of each query

    for j in range(0, n_k, block_size):
        kj, vj = k[:, :, j : j + block_size], v[:, :, j : j + block_size]
        s = torch.einsum("bhqd,bhkd->bhqk", q, kj) / math.sqrt(d)
        if causal:
            cols = torch.arange(j, j + kj.shape[2], device=q.device)
            s = s.masked_fill(cols[None, :] > limit[:, None], -float("inf"))
        m_new = torch.maximum(m, s.amax(-1))
        m_use = torch.where(torch.isfinite(m_new), m_new, torch.zeros_like(m_new))
        p = torch.exp(s - m_use[..., None])
        o = o + torch.einsum("bhqk,bhkd->bhqd", p, vj)  # MISTAKE
        l = l * torch.exp(m - m_use) + p.sum(-1)
        m = m_new
    return o / l[..., None]
