import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    """Decode step, one block at a time with an online softmax (like vLLM's kernel)."""
    B, H, d = q.shape
    block_size = k_cache.size(1)
    Hkv = k_cache.size(2)
    kv_head = torch.arange(H, device=q.device) // (H // Hkv)
    scale = 1.0 / math.sqrt(d)

    outs = []
    for b in range(B):
        n_tokens = int(lengths[b].item())
        qb = q[b] * scale                                           # (H, d)
        m = torch.full((H,), float("-inf"), dtype=q.dtype, device=q.device)
        l = torch.zeros(H, dtype=q.dtype, device=q.device)
        acc = torch.zeros(H, d, dtype=q.dtype, device=q.device)
        num_used = (n_tokens + block_size - 1) // block_size
        for n in range(num_used):
            blk = int(block_table[b, n])
            valid = min(block_size, n_tokens - n * block_size)
            kb = k_cache[blk, :valid][:, kv_head]                   # (valid, H, d)
            vb = v_cache[blk, :valid][:, kv_head]
            s = torch.einsum("hd,thd->ht", qb, kb)                  # (H, valid)
            m_new = torch.maximum(m, s.max(dim=-1).values)
            alpha = torch.exp(m - m_new)
            p = torch.exp(s - m_new[:, None])
            l = l * alpha + p.sum(dim=-1)
            acc = acc * alpha[:, None] + torch.einsum("ht,thd->hd", p, vb)
            m = m_new
        outs.append(acc / l[:, None])
    return torch.stack(outs)
