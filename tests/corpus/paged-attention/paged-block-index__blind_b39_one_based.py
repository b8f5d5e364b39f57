import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    block_size, num_kv_heads = k_cache.shape[1], k_cache.shape[2]
    per_kv = H // num_kv_heads
    result = []
    for b in range(B):
        n = int(lengths[b])
        ks, vs = [], []
        for t in range(1, n + 1):  # t counts tokens 1..n
            page = block_table[b, (t - 1) // block_size]
            offset = t % block_size  # MISTAKE
            ks.append(k_cache[page, offset])
            vs.append(v_cache[page, offset])
        k = torch.stack(ks, dim=1)  # (Hkv, n, d)
        v = torch.stack(vs, dim=1)
        k = k.repeat_interleave(per_kv, dim=0)
        v = v.repeat_interleave(per_kv, dim=0)
        scores = (q[b].unsqueeze(1) @ k.transpose(1, 2)).squeeze(1) / math.sqrt(d)  # (H, n)
        w = torch.softmax(scores, dim=-1)
        result.append((w.unsqueeze(1) @ v).squeeze(1))
    return torch.stack(result)
