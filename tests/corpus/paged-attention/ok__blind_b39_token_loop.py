import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    """One decode step over a paged KV cache, one token at a time."""
    B, H, d = q.shape
    block_size = k_cache.shape[1]
    num_kv_heads = k_cache.shape[2]
    group = H // num_kv_heads
    out = torch.empty_like(q)
    for b in range(B):
        length = int(lengths[b])
        keys, values = [], []
        for t in range(length):
            block = int(block_table[b, t // block_size])
            slot = t % block_size
            keys.append(k_cache[block, slot])
            values.append(v_cache[block, slot])
        k = torch.stack(keys).repeat_interleave(group, dim=1)    # (L, H, d)
        v = torch.stack(values).repeat_interleave(group, dim=1)  # (L, H, d)
        scores = torch.einsum("hd,lhd->hl", q[b], k) / math.sqrt(d)
        scores = scores - scores.max(dim=-1, keepdim=True).values
        weights = scores.exp()
        weights = weights / weights.sum(dim=-1, keepdim=True)
        out[b] = torch.einsum("hl,lhd->hd", weights, v)
    return out
