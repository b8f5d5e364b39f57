import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    num_blocks, block_size, num_kv_heads, head_dim = k_cache.shape
    batch, num_heads, _ = q.shape
    group = num_heads // num_kv_heads
    k_flat = k_cache.reshape(num_blocks * block_size, num_kv_heads, head_dim)
    v_flat = v_cache.reshape(num_blocks * block_size, num_kv_heads, head_dim)

    results = []
    for b in range(batch):
        seq_len = int(lengths[b])
        positions = torch.arange(seq_len, device=q.device)
        slot_mapping = block_table[b][positions // block_size] * block_size + positions % block_size
        keys = k_flat[slot_mapping]          # (L, Hkv, d)
        values = v_flat[slot_mapping]
        heads = []
        for h in range(num_heads):
            kvh = h // group
            s = keys[:, kvh, :] @ q[b, h] / math.sqrt(head_dim)    # (L,)
            p = torch.softmax(s, dim=0)
            heads.append(p @ values[:, kvh, :])
        results.append(torch.stack(heads))
    return torch.stack(results)
