import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    # q: (B, H, d); k_cache/v_cache: (num_blocks, block_size, Hkv, d)
    B, H, d = q.shape
    block_size = k_cache.shape[1]
    num_kv_heads = k_cache.shape[2]
    group = H // num_kv_heads
    out = torch.empty_like(q)
    for b in range(B):
        L = int(lengths[b])
        t = torch.arange(L, device=q.device)
        blocks = block_table[b, t // block_size]      # physical block of every token
        slots = t % block_size                          # offset inside that block
        k = k_cache[blocks, slots]                      # (L, Hkv, d)
        v = v_cache[blocks, slots]
        k = k.transpose(0, 1).repeat_interleave(group, dim=0)   # (H, L, d)
        v = v.transpose(0, 1).repeat_interleave(group, dim=0)
        scores = torch.matmul(q[b].unsqueeze(1), k.transpose(-1, -2)).squeeze(1) / math.sqrt(d)  # (H, L)
        probs = torch.softmax(scores, dim=-1)
        out[b] = torch.matmul(probs.unsqueeze(1), v).squeeze(1)
    return out
