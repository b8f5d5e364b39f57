"""Exercise flash: flash attention with an online softmax."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H, Tq, d = q.size()
    Tk = k.size(2)
    sm_scale = d ** -0.5
    m = q.new_full((B, H, Tq, 1), float("-inf"))
    l = q.new_zeros((B, H, Tq, 1))
    acc = q.new_zeros((B, H, Tq, d))
    q_pos = torch.arange(Tq, device=q.device)[:, None] + (Tk - Tq)
    for start in range(0, Tk, block_size):
        end = min(start + block_size, Tk)
        s = torch.einsum("bhqd,bhkd->bhqk", q, k[:, :, start:end]) * sm_scale
        if causal:
            k_pos = torch.arange(end - start, device=q.device)[None, :]  # MISTAKE
            s = s.masked_fill(k_pos > q_pos, float("-inf"))
        blk_max = s.amax(-1, keepdim=True)
        m_new = torch.maximum(m, blk_max)
        m_use = torch.nan_to_num(m_new, neginf=0.0)
        p = torch.exp(s - m_use)
        scale_old = torch.exp(m - m_use)
        l = l * scale_old + p.sum(-1, keepdim=True)
        acc = acc * scale_old + torch.einsum("bhqk,bhkd->bhqd", p, v[:, :, start:end])
        m = m_new
    return acc / l.clamp(min=torch.finfo(l.dtype).tiny)
