"""Causal mask is top-left aligned (key j visible iff j <= i, ignoring Tk - Tq) and the accumulator is never divided by the running sum."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    bsz, nh, n_q, hd = q.shape
    n_k = k.shape[-2]
    dt = q.dtype
    acc_dt = torch.float64 if dt == torch.float64 else torch.float32
    q = q.to(acc_dt) * (1.0 / math.sqrt(hd))
    k = k.to(acc_dt)
    v = v.to(acc_dt)

    m_i = q.new_full((bsz, nh, n_q), float("-inf"))
    l_i = q.new_zeros((bsz, nh, n_q))
    acc = q.new_zeros((bsz, nh, n_q, hd))
    q_idx = torch.arange(n_q, device=q.device)

    for j0 in range(0, n_k, block_size):
        j1 = min(n_k, j0 + block_size)
        s_ij = torch.einsum("bhqd,bhkd->bhqk", q, k[..., j0:j1, :])
        if causal:
            k_idx = torch.arange(j0, j1, device=q.device)
            future = k_idx[None, :] > q_idx[:, None]
            s_ij = s_ij.masked_fill(future, float("-inf"))
        m_new = torch.maximum(m_i, s_ij.amax(-1))
        m_safe = torch.nan_to_num(m_new, neginf=0.0)
        p_ij = torch.exp(s_ij - m_safe[..., None])
        alpha = torch.exp(m_i - m_safe)
        l_i = alpha * l_i + p_ij.sum(-1)
        acc = alpha[..., None] * acc + torch.einsum("bhqk,bhkd->bhqd", p_ij, v[..., j0:j1, :])
        m_i = m_new

    return acc.to(dt)
