import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    block_size = k_cache.shape[1]
    num_kv_heads = k_cache.shape[2]
    group = H // num_kv_heads
    out = torch.zeros_like(q)
    for b in range(B):
        L = int(lengths[b]) - 1  # MISTAKE
        t = torch.arange(L, device=q.device)
        blocks = block_table[b, t // block_size]
        slots = t % block_size
        k = k_cache[blocks, slots].transpose(0, 1).repeat_interleave(group, dim=0)   # (H, L, d)
        v = v_cache[blocks, slots].transpose(0, 1).repeat_interleave(group, dim=0)
        scores = torch.matmul(k, q[b].unsqueeze(-1)).squeeze(-1) / math.sqrt(d)    # (H, L)
        probs = torch.softmax(scores, dim=-1)
        out[b] = torch.matmul(probs.unsqueeze(1), v).squeeze(1)
    return out
