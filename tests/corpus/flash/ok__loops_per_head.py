"""Plain Python loops over batch and heads; each (Tq, d) head is processed key block by key block."""

import torch


def one_head(q, k, v, causal, block_size):
    Tq, d = q.shape
    Tk = k.shape[0]
    m = q.new_full((Tq,), float("-inf"))
    l = q.new_zeros(Tq)
    acc = q.new_zeros(Tq, d)
    for j in range(0, Tk, block_size):
        s = (q @ k[j:j + block_size].T) / d ** 0.5  # (Tq, bs)
        if causal:
            key = torch.arange(j, j + s.shape[1], device=q.device)
            query = torch.arange(Tq, device=q.device) + Tk - Tq
            s = s.masked_fill(key[None] > query[:, None], float("-inf"))
        m_new = torch.max(m, s.max(dim=1).values)
        shift = torch.where(m_new == float("-inf"), 0.0, m_new)
        p = (s - shift[:, None]).exp()
        alpha = (m - shift).exp()
        l = l * alpha + p.sum(1)
        acc = acc * alpha[:, None] + p @ v[j:j + block_size]
        m = m_new
    return torch.where(l[:, None] > 0, acc / l[:, None], 0.0)


def flash_attention(q, k, v, causal=False, block_size=64):
    return torch.stack([
        torch.stack([one_head(q[b, h], k[b, h], v[b, h], causal, block_size) for h in range(q.shape[1])])
        for b in range(q.shape[0])
    ])
