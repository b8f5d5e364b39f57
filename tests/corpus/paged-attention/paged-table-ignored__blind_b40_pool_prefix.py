import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    num_blocks, bs, Hkv, _ = k_cache.shape
    g = H // Hkv
    out = q.new_empty(B, H, d)
    for b in range(B):
        L = int(lengths[b])
        nblk = math.ceil(L / bs)
        blocks = torch.arange(nblk, device=q.device)  # MISTAKE
        k = k_cache[blocks].reshape(-1, Hkv, d)[:L]
        v = v_cache[blocks].reshape(-1, Hkv, d)[:L]
        k = k.repeat_interleave(g, dim=1)
        v = v.repeat_interleave(g, dim=1)
        s = torch.einsum("hd,lhd->hl", q[b], k) / math.sqrt(d)
        p = torch.softmax(s, dim=-1)
        out[b] = torch.einsum("hl,lhd->hd", p, v)
    return out
