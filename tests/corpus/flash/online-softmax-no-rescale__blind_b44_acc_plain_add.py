import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    b, h, n_q, dim = q.shape
    n_k = k.shape[-2]
    inv = 1.0 / math.sqrt(dim)
    m_i = torch.full((b, h, n_q, 1), float("-inf"), dtype=q.dtype, device=q.device)
    l_i = torch.zeros_like(m_i)
    acc = torch.zeros(b, h, n_q, v.shape[-1], dtype=q.dtype, device=q.device)
    shift = n_k - n_q
    rows = torch.arange(n_q, device=q.device)[:, None]
    for s0 in range(0, n_k, block_size):
        kb = k[..., s0:s0 + block_size, :]
        vb = v[..., s0:s0 + block_size, :]
        sc = torch.matmul(q, kb.transpose(-1, -2)) * inv
        if causal:
            cols = torch.arange(s0, s0 + kb.shape[-2], device=q.device)[None, :]
            sc = sc.masked_fill(cols > rows + shift, float("-inf"))
        m_new = torch.maximum(m_i, sc.max(dim=-1, keepdim=True).values)
        m_safe = torch.nan_to_num(m_new, neginf=0.0)
        p = torch.exp(sc - m_safe)
        alpha = torch.exp(m_i - m_safe)
        l_i = alpha * l_i + p.sum(dim=-1, keepdim=True)
        acc = acc + torch.matmul(p, vb)  # MISTAKE
        m_i = m_new
    return acc / torch.where(l_i > 0, l_i, torch.ones_like(l_i))
