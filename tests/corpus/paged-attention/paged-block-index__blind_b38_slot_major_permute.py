import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    _, block_size, Hkv, _ = k_cache.shape
    M = block_table.shape[1]
    G = H // Hkv

    def to_heads(x):
        # (B, M, block_size, Hkv, d) -> (B, Hkv, M * block_size, d)
        return x.permute(0, 3, 2, 1, 4).reshape(B, Hkv, M * block_size, d)  # MISTAKE

    k = to_heads(k_cache[block_table])
    v = to_heads(v_cache[block_table])
    qg = q.reshape(B, Hkv, G, d)
    scores = qg @ k.transpose(-1, -2) / math.sqrt(d)           # (B, Hkv, G, P)
    pos = torch.arange(M * block_size, device=q.device)
    mask = pos[None, :] < lengths[:, None]
    scores = scores.masked_fill(~mask[:, None, None, :], float("-inf"))
    p = torch.softmax(scores, dim=-1)
    return (p @ v).reshape(B, H, d)
