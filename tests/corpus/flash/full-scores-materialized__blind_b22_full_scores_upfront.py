"""flash: all scores by one einsum, then the online softmax walks their column blocks."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    sm_scale = d ** -0.5
    S = torch.einsum("bhqd,bhkd->bhqk", q, k) * sm_scale  # MISTAKE
    if causal:
        keep = torch.ones(Tq, Tk, dtype=torch.bool, device=q.device).tril(Tk - Tq)
        S = S.masked_fill(~keep, float("-inf"))

    m_i = torch.full((B, H, Tq), float("-inf"), dtype=q.dtype, device=q.device)
    l_i = torch.zeros(B, H, Tq, dtype=q.dtype, device=q.device)
    o = torch.zeros_like(q)
    for j0 in range(0, Tk, block_size):
        s = S[..., j0 : j0 + block_size]
        m_new = torch.maximum(m_i, s.max(dim=-1).values)
        m_safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
        p = torch.exp(s - m_safe[..., None])
        corr = torch.exp(m_i - m_safe)
        l_i = l_i * corr + p.sum(dim=-1)
        o = o * corr[..., None] + p @ v[:, :, j0 : j0 + block_size]
        m_i = m_new
    return o / l_i[..., None]
