import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    bs, Hkv = k_cache.shape[1], k_cache.shape[2]
    G = H // Hkv
    per_seq = []
    for b in range(B):
        n = int(lengths[b]) + 1  # MISTAKE
        nblk = -(-n // bs)
        pages = block_table[b, :nblk]
        k = k_cache[pages].flatten(0, 1)[:n]  # (n, Hkv, d)
        v = v_cache[pages].flatten(0, 1)[:n]
        qg = q[b].view(Hkv, G, d)
        s = torch.einsum("kgd,nkd->kgn", qg, k) / math.sqrt(d)
        w = torch.exp(s - torch.logsumexp(s, dim=-1, keepdim=True))
        per_seq.append(torch.einsum("kgn,nkd->kgd", w, v).reshape(H, d))
    return torch.stack(per_seq)
