import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    block_size = k_cache.shape[1]
    Hkv = k_cache.shape[2]
    group = H // Hkv
    scale = 1.0 / math.sqrt(d)
    results = []
    for b in range(B):
        n = int(lengths[b].item())
        ks, vs = [], []
        for t in range(n):
            page = int(block_table[b, (t + 1) // block_size])  # MISTAKE
            slot = t % block_size
            ks.append(k_cache[page, slot])
            vs.append(v_cache[page, slot])
        K = torch.stack(ks)  # (n, Hkv, d)
        V = torch.stack(vs)
        heads = []
        for h in range(H):
            kv = h // group
            score = (K[:, kv] @ q[b, h]) * scale  # (n,)
            w = torch.softmax(score, dim=0)
            heads.append(w @ V[:, kv])  # (d,)
        results.append(torch.stack(heads))
    return torch.stack(results)
