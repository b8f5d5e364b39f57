import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    block_size = k_cache.shape[1]
    kv_heads = k_cache.shape[2]
    n_rep = H // kv_heads
    scale = 1.0 / math.sqrt(d)
    out = torch.empty_like(q)
    for b in range(B):
        L = int(lengths[b])
        pos = torch.arange(L, device=block_table.device)
        blocks = block_table[b, pos // block_size]
        slots = pos % block_size
        k = k_cache[blocks, slots].repeat_interleave(n_rep, dim=1)  # (L, H, d)
        v = v_cache[blocks, slots].repeat_interleave(n_rep, dim=1)
        qb = q[b].clone()
        qb.mul(scale)  # MISTAKE
        scores = torch.einsum("hd,lhd->hl", qb, k)
        scores = scores - scores.amax(dim=-1, keepdim=True)
        p = scores.exp()
        p = p / p.sum(dim=-1, keepdim=True)
        out[b] = torch.einsum("hl,lhd->hd", p, v)
    return out
