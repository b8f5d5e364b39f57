import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    block_size, Hkv = k_cache.shape[1], k_cache.shape[2]
    G = H // Hkv
    T = int(lengths.max())
    pos = torch.arange(T, device=q.device)
    blk = block_table[:, pos // block_size]                   # (B, T)
    off = (pos % block_size).expand(B, T)
    k = k_cache[blk, off].transpose(1, 2)                     # (B, Hkv, T, d)
    v = v_cache[blk, off].transpose(1, 2)
    k, v = k.repeat(1, G, 1, 1), v.repeat(1, G, 1, 1)  # MISTAKE
    scores = torch.matmul(k, q.unsqueeze(-1)).squeeze(-1) / math.sqrt(d)   # (B, H, T)
    keep = pos[None, :] < lengths[:, None]
    scores = scores.masked_fill(~keep[:, None, :], float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    return torch.matmul(probs.unsqueeze(-2), v).squeeze(-2)
