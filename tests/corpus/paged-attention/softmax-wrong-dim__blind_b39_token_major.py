import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    block_size, num_kv_heads = k_cache.shape[1], k_cache.shape[2]
    kv_of_head = torch.arange(H, device=q.device) // (H // num_kv_heads)
    scale = 1 / math.sqrt(d)
    out = torch.empty_like(q)
    for b in range(B):
        length = int(lengths[b])
        t = torch.arange(length, device=block_table.device)
        where = block_table[b, t // block_size]
        k = k_cache[where, t % block_size][:, kv_of_head]  # (L, H, d)
        v = v_cache[where, t % block_size][:, kv_of_head]
        s = torch.einsum("hd,thd->th", q[b], k) * scale  # (L, H)
        p = torch.softmax(s, dim=-1)  # MISTAKE
        out[b] = torch.einsum("th,thd->hd", p, v)
    return out
