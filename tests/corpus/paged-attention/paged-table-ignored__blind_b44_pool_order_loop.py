import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    batch, n_heads, head_dim = q.shape
    block_size, n_kv = k_cache.shape[1], k_cache.shape[2]
    result = torch.empty_like(q)
    for b in range(batch):
        n = int(lengths[b])
        n_blocks = (n + block_size - 1) // block_size
        blocks = torch.arange(n_blocks, device=q.device)  # MISTAKE
        k_seq = k_cache[blocks].flatten(0, 1)[:n]
        v_seq = v_cache[blocks].flatten(0, 1)[:n]
        k_seq = k_seq.repeat_interleave(n_heads // n_kv, dim=1).transpose(0, 1)
        v_seq = v_seq.repeat_interleave(n_heads // n_kv, dim=1).transpose(0, 1)
        att = torch.matmul(k_seq, q[b].unsqueeze(-1)).squeeze(-1) / math.sqrt(head_dim)
        att = torch.softmax(att, dim=-1)
        result[b] = torch.matmul(att.unsqueeze(1), v_seq).squeeze(1)
    return result
