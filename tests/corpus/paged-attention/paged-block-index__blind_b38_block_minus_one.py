import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    block_size, Hkv = k_cache.shape[1], k_cache.shape[2]
    group = H // Hkv
    out = []
    for b in range(B):
        L = int(lengths[b])
        t = torch.arange(L, device=q.device)
        blocks = block_table[b][t // block_size - 1]  # MISTAKE
        slots = t % block_size
        k = k_cache[blocks, slots].permute(1, 0, 2)           # (Hkv, L, d)
        v = v_cache[blocks, slots].permute(1, 0, 2)
        k = k.repeat_interleave(group, dim=0)                  # (H, L, d)
        v = v.repeat_interleave(group, dim=0)
        s = (k @ q[b].unsqueeze(-1)).squeeze(-1) / math.sqrt(d)   # (H, L)
        p = s.softmax(dim=-1)
        out.append((p.unsqueeze(1) @ v).squeeze(1))
    return torch.stack(out, dim=0)
