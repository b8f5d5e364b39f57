"""Exercise flash: flash attention with an online softmax."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    scale = 1 / math.sqrt(d)
    m_i = torch.full((B, H, Tq, 1), float("-inf"), dtype=q.dtype, device=q.device)
    l_i = torch.zeros((B, H, Tq, 1), dtype=q.dtype, device=q.device)
    o_i = torch.zeros_like(q)
    q_idx = torch.arange(Tq, device=q.device)[:, None] + (Tk - Tq)
    for j in range(0, Tk, block_size):
        k_j = k[:, :, j : j + block_size]
        v_j = v[:, :, j : j + block_size]
        s_ij = (q @ k_j.transpose(-2, -1)) * scale
        if causal:
            k_idx = torch.arange(j, j + k_j.shape[2], device=q.device)[None, :]
            s_ij = s_ij.masked_fill(k_idx > q_idx, float("-inf"))
        m_new = torch.maximum(m_i, s_ij.amax(-1, keepdim=True))
        m_safe = m_new.masked_fill(torch.isneginf(m_new), 0.0)
        p_ij = torch.exp(s_ij - m_safe)
        l_i = l_i * torch.exp(m_i - m_safe) + p_ij.sum(-1, keepdim=True)
        o_i = o_i + p_ij @ v_j  # MISTAKE
        m_i = m_new
    return o_i / l_i.clamp_min(torch.finfo(l_i.dtype).tiny)
