import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    block_size, n_kv = k_cache.shape[1], k_cache.shape[2]
    rep = H // n_kv
    scale = 1 / math.sqrt(d)
    out = torch.zeros_like(q)
    for b in range(B):
        seq_len = int(lengths[b])
        qb = q[b].view(n_kv, rep, d) * scale
        m = torch.full((n_kv, rep), float("-inf"), dtype=q.dtype, device=q.device)
        l = torch.zeros((n_kv, rep), dtype=q.dtype, device=q.device)
        acc = torch.zeros((n_kv, rep, d), dtype=q.dtype, device=q.device)
        n_blocks = (seq_len + block_size - 1) // block_size
        for n in range(n_blocks):
            phys = block_table[b, n]
            kb, vb = k_cache[phys], v_cache[phys]  # MISTAKE
            s = torch.einsum("krd,tkd->krt", qb, kb)
            m_new = torch.maximum(m, s.amax(-1))
            alpha = torch.exp(m - m_new)
            p = torch.exp(s - m_new[..., None])
            l = l * alpha + p.sum(-1)
            acc = acc * alpha[..., None] + torch.einsum("krt,tkd->krd", p, vb)
            m = m_new
        out[b] = (acc / l[..., None]).reshape(H, d)
    return out
