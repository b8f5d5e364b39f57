"""SDPA with enable_gqa."""

import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    bs, Hkv = k_cache.shape[1], k_cache.shape[2]
    outs = []
    for b in range(B):
        n = int(lengths[b])
        t = torch.arange(n, device=q.device)
        blk = block_table[b][t // bs]
        slot = t % bs
        k = k_cache[blk, slot]
        v = v_cache[blk, slot]
        o = torch.nn.functional.scaled_dot_product_attention(q[b][:, None], k.transpose(0, 1), v.transpose(0, 1), enable_gqa=True)
        outs.append(o[:, 0])
    return torch.stack(outs)
