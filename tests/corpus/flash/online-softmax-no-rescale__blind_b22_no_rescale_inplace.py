"""flash: in-place running statistics (mul_/add_), a CUDA-kernel-like loop."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H, M, D = q.shape
    N = k.shape[2]
    softmax_scale = 1.0 / math.sqrt(D)
    m_prev = torch.full((B, H, M, 1), float("-inf"), dtype=q.dtype, device=q.device)
    l_prev = torch.zeros((B, H, M, 1), dtype=q.dtype, device=q.device)
    acc = torch.zeros((B, H, M, D), dtype=q.dtype, device=q.device)
    offs_m = torch.arange(M, device=q.device)[:, None] + (N - M)

    for start_n in range(0, N, block_size):
        end_n = min(start_n + block_size, N)
        qk = torch.matmul(q, k[:, :, start_n:end_n].transpose(2, 3))
        qk.mul_(softmax_scale)
        if causal:
            offs_n = torch.arange(start_n, end_n, device=q.device)[None, :]
            qk.masked_fill_(offs_n > offs_m, float("-inf"))
        m_cur = torch.maximum(m_prev, qk.amax(dim=-1, keepdim=True))
        m_cur_safe = m_cur.masked_fill(m_cur == float("-inf"), 0.0)
        p = torch.exp(qk - m_cur_safe)
        corr = torch.exp(m_prev - m_cur_safe)
        l_prev.mul_(corr).add_(p.sum(dim=-1, keepdim=True))
        acc.add_(p @ v[:, :, start_n:end_n])  # MISTAKE
        m_prev = m_cur
    return acc / l_prev
