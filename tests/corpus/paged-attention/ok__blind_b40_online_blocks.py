import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    """Flash-decoding style: walk the sequence block by block with an online softmax."""
    B, H, d = q.shape
    num_blocks, block_size, Hkv, _ = k_cache.shape
    rep = H // Hkv
    kv_head = torch.arange(H, device=q.device) // rep
    out = torch.zeros_like(q)
    for b in range(B):
        n = int(lengths[b])
        qb = q[b] / math.sqrt(d)  # (H, d)
        m = torch.full((H,), float("-inf"), dtype=q.dtype, device=q.device)
        l = torch.zeros(H, dtype=q.dtype, device=q.device)
        acc = torch.zeros(H, d, dtype=q.dtype, device=q.device)
        for start in range(0, n, block_size):
            blk = int(block_table[b, start // block_size])
            cnt = min(block_size, n - start)
            kb = k_cache[blk, :cnt][:, kv_head]  # (cnt, H, d)
            vb = v_cache[blk, :cnt][:, kv_head]
            s = (kb * qb).sum(-1).T  # (H, cnt)
            m_new = torch.maximum(m, s.max(dim=-1).values)
            alpha = torch.exp(m - m_new)
            p = torch.exp(s - m_new[:, None])
            l = l * alpha + p.sum(-1)
            acc = acc * alpha[:, None] + torch.einsum("hc,chd->hd", p, vb)
            m = m_new
        out[b] = acc / l[:, None]
    return out
