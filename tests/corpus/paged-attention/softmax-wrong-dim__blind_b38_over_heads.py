import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    block_size = k_cache.shape[1]
    group = H // k_cache.shape[2]
    result = []
    for b in range(B):
        L = int(lengths[b])
        t = torch.arange(L, device=q.device)
        k = k_cache[block_table[b, t // block_size], t % block_size]     # (L, Hkv, d)
        v = v_cache[block_table[b, t // block_size], t % block_size]
        k = k.repeat_interleave(group, dim=1)                            # (L, H, d)
        v = v.repeat_interleave(group, dim=1)
        scores = torch.einsum("hd,lhd->hl", q[b], k) / math.sqrt(d)      # (H, L)
        probs = torch.softmax(scores, dim=0)  # MISTAKE
        result.append(torch.einsum("hl,lhd->hd", probs, v))
    return torch.stack(result)
