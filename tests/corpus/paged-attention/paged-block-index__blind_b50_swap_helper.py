import math

import torch


def fetch(cache, table_row, n_tok, block_size):
    pos = torch.arange(n_tok, device=table_row.device)
    return cache[table_row[pos % block_size], pos // block_size]  # MISTAKE: // and % swapped (block is pos // bs, slot pos % bs)


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    block_size, n_kv = k_cache.shape[1], k_cache.shape[2]
    rep = H // n_kv
    scale = 1.0 / math.sqrt(d)
    outs = []
    for b in range(B):
        L = int(lengths[b])
        keys = fetch(k_cache, block_table[b], L, block_size)  # (L, Hkv, d)
        vals = fetch(v_cache, block_table[b], L, block_size)
        keys = keys.repeat_interleave(rep, dim=1)  # (L, H, d)
        vals = vals.repeat_interleave(rep, dim=1)
        sc = torch.einsum("hd,lhd->hl", q[b], keys) * scale
        w = torch.softmax(sc, dim=-1)
        outs.append(torch.einsum("hl,lhd->hd", w, vals))
    return torch.stack(outs)
