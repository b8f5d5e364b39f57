import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    _, bs, Hkv, _ = k_cache.shape
    M = block_table.shape[1]
    L = M * bs
    # gather whole pages, then flatten (page, slot) into one token axis
    k = k_cache[block_table].flatten(1, 2)  # (B, L, Hkv, d)
    v = v_cache[block_table].flatten(1, 2)
    k = k.permute(0, 2, 1, 3).repeat_interleave(H // Hkv, dim=1)  # (B, H, L, d)
    v = v.permute(0, 2, 1, 3).repeat_interleave(H // Hkv, dim=1)
    s = (q.unsqueeze(2) @ k.transpose(-1, -2)).squeeze(2) / math.sqrt(d)  # (B, H, L)
    valid = torch.arange(L, device=q.device)[None, :] <= lengths[:, None]  # MISTAKE
    s = torch.where(valid[:, None, :], s, torch.full_like(s, float("-inf")))
    p = torch.softmax(s, dim=-1)
    return (p.unsqueeze(2) @ v).squeeze(2)
