import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    block_size, Hkv = k_cache.shape[1], k_cache.shape[2]
    out = torch.empty_like(q)
    for b in range(B):
        L = int(lengths[b])
        t = torch.arange(L, device=q.device)
        blocks = block_table[b, t // block_size]
        slots = t % block_size
        k = k_cache[blocks, slots].repeat_interleave(H // Hkv, dim=1)  # (L, H, d)
        v = v_cache[blocks, slots].repeat_interleave(H // Hkv, dim=1)
        scores = torch.einsum("lhd,hd->lh", k, q[b]) / math.sqrt(d)  # (L, H)
        probs = torch.softmax(scores, dim=-1)  # MISTAKE
        out[b] = torch.einsum("lh,lhd->hd", probs, v)
    return out
