import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    block_size, Hkv = k_cache.shape[1], k_cache.shape[2]
    M = block_table.shape[1]
    P = M * block_size
    n_rep = H // Hkv

    k = k_cache[block_table].flatten(1, 2)               # (B, P, Hkv, d)
    v = v_cache[block_table].flatten(1, 2)
    k = k.repeat_interleave(n_rep, dim=2).transpose(1, 2)   # (B, H, P, d)
    v = v.repeat_interleave(n_rep, dim=2).transpose(1, 2)

    scores = torch.matmul(k, q.unsqueeze(-1)).squeeze(-1) / math.sqrt(d)   # (B, H, P)
    pos = torch.arange(P, device=q.device)
    valid = pos[None, :] <= lengths[:, None]  # MISTAKE
    scores = scores.masked_fill(~valid[:, None, :], float("-inf"))
    attn = torch.softmax(scores, dim=-1)
    return torch.matmul(attn.unsqueeze(2), v).squeeze(2)
