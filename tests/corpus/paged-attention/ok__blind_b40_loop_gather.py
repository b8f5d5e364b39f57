import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    block_size, Hkv = k_cache.shape[1], k_cache.shape[2]
    group = H // Hkv
    scale = 1.0 / math.sqrt(d)
    out = torch.empty_like(q)
    for b in range(B):
        L = int(lengths[b])
        n_blocks = (L + block_size - 1) // block_size
        blocks = block_table[b, :n_blocks]
        k = k_cache[blocks].reshape(-1, Hkv, d)[:L]  # (L, Hkv, d)
        v = v_cache[blocks].reshape(-1, Hkv, d)[:L]
        k = k.repeat_interleave(group, dim=1)  # (L, H, d)
        v = v.repeat_interleave(group, dim=1)
        scores = torch.einsum("hd,lhd->hl", q[b], k) * scale
        scores = scores - scores.amax(dim=-1, keepdim=True)
        p = scores.exp()
        p = p / p.sum(dim=-1, keepdim=True)
        out[b] = torch.einsum("hl,lhd->hd", p, v)
    return out
