"""A while loop over key blocks that never moves j forward: it processes block 0 forever."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    Tq, Tk = q.shape[-2], k.shape[-2]
    m = torch.full(q.shape[:-1] + (1,), -math.inf, dtype=q.dtype, device=q.device)
    l = torch.zeros_like(m)
    acc = torch.zeros_like(q)
    j = 0
    while j < Tk:
        s = q @ k[..., j:j + block_size, :].transpose(-2, -1) / math.sqrt(q.shape[-1])
        m_new = torch.maximum(m, s.amax(-1, keepdim=True))
        p, a = torch.exp(s - m_new), torch.exp(m - m_new)
        l = a * l + p.sum(-1, keepdim=True)
        acc = a * acc + p @ v[..., j:j + block_size, :]
        m = m_new
        # TODO j += block_size
    return acc / torch.where(l == 0, 1.0, l)
