import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    _, bs, Hkv, _ = k_cache.shape
    g = H // Hkv
    result = torch.empty_like(q)
    for b in range(B):
        L = int(lengths[b])
        nb = -(-L // bs)  # blocks in use, rounded up
        ids = block_table[b, :nb]
        kb = k_cache[ids].reshape(nb * bs, Hkv, d)[:L]  # this sequence's tokens, in order
        vb = v_cache[ids].reshape(nb * bs, Hkv, d)[:L]
        qb = q[b].view(Hkv, g, d)  # query heads n*g .. n*g+g-1 read kv head n
        s = torch.einsum("ngd,lnd->ngl", qb, kb) / math.sqrt(d)
        w = torch.softmax(s, dim=-1)
        result[b] = torch.einsum("ngl,lnd->ngd", w, vb).reshape(H, d)
    return result
