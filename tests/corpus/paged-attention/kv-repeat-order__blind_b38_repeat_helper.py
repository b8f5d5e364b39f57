import math

import torch


def expand_kv(x, n_rep):
    # (L, Hkv, d) -> (L, H, d)
    return x.repeat(1, n_rep, 1)  # MISTAKE


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    block_size, Hkv = k_cache.shape[1], k_cache.shape[2]
    n_rep = H // Hkv
    outputs = []
    for b in range(B):
        L = int(lengths[b])
        t = torch.arange(L, device=q.device)
        blk = block_table[b, t // block_size]
        off = t % block_size
        k = expand_kv(k_cache[blk, off], n_rep)      # (L, H, d)
        v = expand_kv(v_cache[blk, off], n_rep)
        scores = torch.einsum("hd,lhd->hl", q[b], k) / math.sqrt(d)
        probs = torch.softmax(scores, dim=-1)
        outputs.append(torch.einsum("hl,lhd->hd", probs, v))
    return torch.stack(outputs)
