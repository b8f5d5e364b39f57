"""A clean online softmax that never divides the scores by sqrt(d)."""

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    m = torch.full((B, H, Tq, 1), float("-inf"), dtype=q.dtype, device=q.device)
    l = torch.zeros((B, H, Tq, 1), dtype=q.dtype, device=q.device)
    acc = torch.zeros_like(q)
    last = torch.arange(Tq, device=q.device)[:, None] + (Tk - Tq)
    for j in range(0, Tk, block_size):
        s = q @ k[:, :, j:j + block_size].transpose(-2, -1)
        if causal:
            s = s.masked_fill(torch.arange(j, j + s.shape[-1], device=q.device) > last, float("-inf"))
        m_new = torch.maximum(m, s.amax(-1, keepdim=True))
        safe = m_new.masked_fill(m_new == float("-inf"), 0)
        p = torch.exp(s - safe)
        alpha = torch.exp(m - safe)
        l = alpha * l + p.sum(-1, keepdim=True)
        acc = alpha * acc + p @ v[:, :, j:j + block_size]
        m = m_new
    return acc / l.masked_fill(l == 0, 1)
