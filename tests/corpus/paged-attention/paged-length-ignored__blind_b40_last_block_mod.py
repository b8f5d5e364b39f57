import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    bs, Hkv = k_cache.shape[1], k_cache.shape[2]
    group = H // Hkv
    out = torch.empty_like(q)
    for b in range(B):
        L = int(lengths[b])
        n_blocks = (L + bs - 1) // bs
        ks, vs = [], []
        for i in range(n_blocks):
            blk = block_table[b, i]
            n_tok = L % bs if i == n_blocks - 1 else bs  # MISTAKE
            ks.append(k_cache[blk, :n_tok])
            vs.append(v_cache[blk, :n_tok])
        k = torch.cat(ks).repeat_interleave(group, dim=1)  # (L, H, d)
        v = torch.cat(vs).repeat_interleave(group, dim=1)
        scores = torch.einsum("hd,lhd->hl", q[b], k) / math.sqrt(d)
        probs = torch.softmax(scores, dim=-1)
        out[b] = torch.einsum("hl,lhd->hd", probs, v)
    return out
