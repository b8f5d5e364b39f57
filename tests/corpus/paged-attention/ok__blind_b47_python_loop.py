import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    block_size, n_kv = k_cache.shape[1], k_cache.shape[2]
    group = H // n_kv
    outs = []
    for b in range(B):
        n = int(lengths[b])
        n_blocks = (n + block_size - 1) // block_size
        ids = block_table[b, :n_blocks]
        # this sequence's blocks in table order, flattened to tokens, cut at its length
        keys = k_cache[ids].reshape(n_blocks * block_size, n_kv, d)[:n]  # (n, Hkv, d)
        vals = v_cache[ids].reshape(n_blocks * block_size, n_kv, d)[:n]
        qb = q[b].view(n_kv, group, d)  # query head h = kv * group + j
        att = torch.einsum("kgd,tkd->kgt", qb, keys) / math.sqrt(d)
        att = torch.softmax(att, dim=-1)
        outs.append(torch.einsum("kgt,tkd->kgd", att, vals).reshape(H, d))
    return torch.stack(outs)
