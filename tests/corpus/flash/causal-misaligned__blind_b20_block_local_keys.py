"""Flash attention whose causal mask compares each query's bottom-right limit with the key indices of
the current block. Mistake: the key indices are counted from the start of the block (arange(bs)), not
from the start of the sequence (start + arange(bs)), so every block after the first masks the wrong
keys; right whenever one block covers all keys or causal is off."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H, Tq, d = q.size()
    Tk = k.size(-2)
    scale = d ** -0.5
    m_i = torch.full((B, H, Tq, 1), float("-inf"), dtype=q.dtype, device=q.device)
    l_i = torch.zeros(B, H, Tq, 1, dtype=q.dtype, device=q.device)
    o_i = torch.zeros(B, H, Tq, d, dtype=q.dtype, device=q.device)
    limit = torch.arange(Tq, device=q.device)[:, None] + (Tk - Tq)
    for start in range(0, Tk, block_size):
        kb = k[..., start:start + block_size, :]
        vb = v[..., start:start + block_size, :]
        s = torch.matmul(q, kb.transpose(-2, -1)) * scale
        if causal:
            cols = torch.arange(kb.size(-2), device=q.device)[None, :]  # MISTAKE
            s = s.masked_fill(cols > limit, float("-inf"))
        m_new = torch.maximum(m_i, s.amax(-1, keepdim=True))
        p = torch.exp(s - m_new)
        a = torch.exp(m_i - m_new)
        l_i = a * l_i + p.sum(-1, keepdim=True)
        o_i = a * o_i + torch.matmul(p, vb)
        m_i = m_new
    return o_i / l_i
