import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    block_size, Hkv = k_cache.shape[1], k_cache.shape[2]
    group = H // Hkv
    outs = []
    for b in range(B):
        n = int(lengths[b])
        n_pages = (n + block_size - 1) // block_size  # blocks this sequence actually uses
        pages = block_table[b, :n_pages].tolist()
        keys = torch.cat([k_cache[p] for p in pages], dim=0)[:n]  # (n, Hkv, d)
        vals = torch.cat([v_cache[p] for p in pages], dim=0)[:n]
        keys = keys.repeat_interleave(group, dim=1)  # (n, H, d)
        vals = vals.repeat_interleave(group, dim=1)
        s = torch.einsum("hd,nhd->hn", q[b], keys) / math.sqrt(d)  # (H, n)
        s = s - s.max(dim=-1, keepdim=True).values
        p = s.exp()
        p = p / p.sum(dim=-1, keepdim=True)
        outs.append(torch.einsum("hn,nhd->hd", p, vals))
    return torch.stack(outs)  # (B, H, d)
