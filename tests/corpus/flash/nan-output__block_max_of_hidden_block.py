"""FlashAttention-1 bookkeeping with each block's own max: a block hidden by the causal mask has max -inf, so NaN."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    m = torch.full((B, H, Tq, 1), -math.inf, dtype=q.dtype, device=q.device)
    l = torch.zeros((B, H, Tq, 1), dtype=q.dtype, device=q.device)
    acc = torch.zeros_like(q)
    rows = torch.arange(Tq, device=q.device)[:, None] + Tk - Tq
    for j in range(0, Tk, block_size):
        s = q @ k[:, :, j:j + block_size].transpose(-2, -1) / math.sqrt(d)
        if causal:
            s = s.masked_fill(torch.arange(j, j + s.shape[-1], device=q.device)[None, :] > rows, -math.inf)
        mb = s.amax(-1, keepdim=True)
        pb = torch.exp(s - mb)
        m_new = torch.maximum(m, mb)
        a, b = torch.exp(m - m_new), torch.exp(mb - m_new)
        l = a * l + b * pb.sum(-1, keepdim=True)
        acc = a * acc + b * (pb @ v[:, :, j:j + block_size])
        m = m_new
    return acc / l
