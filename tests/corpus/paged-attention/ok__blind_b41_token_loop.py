import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    block_size = k_cache.shape[1]
    num_kv_heads = k_cache.shape[2]
    group = H // num_kv_heads
    out = torch.empty_like(q)
    for b in range(B):
        L = int(lengths[b])
        keys, vals = [], []
        for t in range(L):
            blk = int(block_table[b, t // block_size])
            off = t % block_size
            keys.append(k_cache[blk, off])
            vals.append(v_cache[blk, off])
        K = torch.stack(keys).repeat_interleave(group, dim=1)  # (L, H, d)
        V = torch.stack(vals).repeat_interleave(group, dim=1)
        scores = torch.einsum("hd,lhd->hl", q[b], K) / math.sqrt(d)
        probs = torch.softmax(scores, dim=-1)
        out[b] = torch.einsum("hl,lhd->hd", probs, V)
    return out
