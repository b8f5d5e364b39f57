import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    block_size = k_cache.shape[1]
    Hkv = k_cache.shape[2]
    max_blocks = block_table.shape[1]
    kv_of_head = torch.arange(H, device=q.device) // (H // Hkv)
    out = []
    for b in range(B):
        L = int(lengths[b])
        ks, vs = [], []
        for n in range((L + block_size - 1) // block_size):
            blk = b * max_blocks + n  # MISTAKE
            ks.append(k_cache[blk])
            vs.append(v_cache[blk])
        k = torch.cat(ks)[:L][:, kv_of_head]        # (L, H, d)
        v = torch.cat(vs)[:L][:, kv_of_head]
        scores = torch.einsum("hd,lhd->hl", q[b], k) / math.sqrt(d)
        p = torch.softmax(scores, dim=-1)
        out.append(torch.einsum("hl,lhd->hd", p, v))
    return torch.stack(out)
