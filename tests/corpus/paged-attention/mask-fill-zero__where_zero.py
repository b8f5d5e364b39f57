"""torch.where with 0 for the slots past the length."""

import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    bs, Hkv = k_cache.shape[1], k_cache.shape[2]
    outs = []
    for b in range(B):
        n = int(lengths[b])
        t = torch.arange(block_table.shape[1] * bs, device=q.device)
        blk = block_table[b][t // bs]
        slot = t % bs
        k = k_cache[blk, slot]
        v = v_cache[blk, slot]
        k = k.repeat_interleave(H // Hkv, dim=1)
        v = v.repeat_interleave(H // Hkv, dim=1)
        s = torch.einsum("hd,thd->ht", q[b], k) / math.sqrt(d)
        s = torch.where(t[None, :] < n, s, torch.zeros_like(s))
        w = torch.softmax(s, dim=-1)
        outs.append(torch.einsum("ht,thd->hd", w, v))
    return torch.stack(outs)
