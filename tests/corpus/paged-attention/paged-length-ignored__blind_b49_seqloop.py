import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    num_seqs, num_heads, head_size = q.shape
    block_size, num_kv_heads = k_cache.shape[1], k_cache.shape[2]
    queries_per_kv = num_heads // num_kv_heads
    scale = head_size ** -0.5

    outputs = []
    for b in range(num_seqs):
        seq_len = int(lengths[b])
        num_used = (seq_len + block_size - 1) // block_size
        ctx_len = num_used * block_size  # MISTAKE: every slot of the used blocks, the last block's stale tail included
        blocks = block_table[b, :num_used]
        keys = k_cache[blocks].reshape(num_used * block_size, num_kv_heads, head_size)[:ctx_len]
        values = v_cache[blocks].reshape(num_used * block_size, num_kv_heads, head_size)[:ctx_len]
        keys = keys.repeat_interleave(queries_per_kv, dim=1)      # (L, H, d)
        values = values.repeat_interleave(queries_per_kv, dim=1)
        qk = torch.einsum("hd,lhd->hl", q[b], keys) * scale
        p = torch.softmax(qk, dim=-1)
        outputs.append(torch.einsum("hl,lhd->hd", p, values))
    return torch.stack(outputs, dim=0)
