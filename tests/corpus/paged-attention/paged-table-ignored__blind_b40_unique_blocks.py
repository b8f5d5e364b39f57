import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    bs, Hkv = k_cache.shape[1], k_cache.shape[2]
    rep = H // Hkv
    result = torch.empty_like(q)
    for b in range(B):
        L = int(lengths[b])
        n_blk = -(-L // bs)
        blocks = torch.unique(block_table[b, :n_blk])  # MISTAKE
        k = k_cache[blocks].reshape(n_blk * bs, Hkv, d)[:L]
        v = v_cache[blocks].reshape(n_blk * bs, Hkv, d)[:L]
        qb = q[b].view(Hkv, rep, d)
        scores = torch.einsum("grd,lgd->grl", qb, k) / math.sqrt(d)
        weights = torch.softmax(scores, dim=-1)
        result[b] = torch.einsum("grl,lgd->grd", weights, v).reshape(H, d)
    return result
