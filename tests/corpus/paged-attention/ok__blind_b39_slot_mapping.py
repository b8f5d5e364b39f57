import math

import torch
import torch.nn.functional as F


def _gather_tokens(cache, block_table, seq, length):
    block_size = cache.shape[1]
    flat = cache.flatten(0, 1)  # (num_blocks * block_size, Hkv, d)
    pos = torch.arange(length, device=block_table.device)
    blocks = block_table[seq, pos // block_size]
    slots = blocks * block_size + pos % block_size
    return flat[slots.to(cache.device)]


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    batch, heads, head_dim = q.shape
    kv_heads = k_cache.shape[2]
    rep = heads // kv_heads
    scale = 1.0 / math.sqrt(head_dim)
    kv_index = torch.arange(heads, device=q.device) // rep
    outs = []
    for seq in range(batch):
        n = int(lengths[seq])
        k = _gather_tokens(k_cache, block_table, seq, n)[:, kv_index].transpose(0, 1)  # (H, n, d)
        v = _gather_tokens(v_cache, block_table, seq, n)[:, kv_index].transpose(0, 1)
        s = (k @ q[seq].unsqueeze(-1)).squeeze(-1) * scale  # (H, n)
        p = F.softmax(s, dim=-1)
        outs.append((p.unsqueeze(1) @ v).squeeze(1))
    return torch.stack(outs)
