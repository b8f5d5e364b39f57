"""Exercise flash: flash attention with an online softmax."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H, Tq, d = q.shape
    Tk = k.size(2)
    S = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d)  # MISTAKE
    if causal:
        qi = torch.arange(Tq, device=q.device).view(-1, 1)
        kj = torch.arange(Tk, device=q.device).view(1, -1)
        S = S.masked_fill(kj > qi + (Tk - Tq), float("-inf"))
    m = torch.full((B, H, Tq, 1), float("-inf"), dtype=q.dtype, device=q.device)
    l = torch.zeros((B, H, Tq, 1), dtype=q.dtype, device=q.device)
    acc = torch.zeros((B, H, Tq, v.size(-1)), dtype=q.dtype, device=q.device)
    for start in range(0, Tk, block_size):
        s = S[..., start : start + block_size]  # one tile of the scores
        m_new = torch.maximum(m, s.max(dim=-1, keepdim=True).values)
        shift = torch.where(m_new == float("-inf"), torch.zeros_like(m_new), m_new)
        p = (s - shift).exp()
        alpha = (m - shift).exp()
        l = alpha * l + p.sum(dim=-1, keepdim=True)
        acc = alpha * acc + p @ v[:, :, start : start + block_size]
        m = m_new
    return acc / torch.where(l > 0, l, torch.ones_like(l))
