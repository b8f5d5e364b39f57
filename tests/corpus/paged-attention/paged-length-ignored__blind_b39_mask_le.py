import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    bs, Hkv = k_cache.shape[1], k_cache.shape[2]
    MB = block_table.shape[1]
    keys = k_cache[block_table].flatten(1, 2)    # (B, MB * bs, Hkv, d)
    vals = v_cache[block_table].flatten(1, 2)
    idx = torch.arange(H, device=q.device) // (H // Hkv)
    keys = keys[:, :, idx]                       # (B, T, H, d)
    vals = vals[:, :, idx]
    scores = torch.einsum("bhd,bthd->bht", q, keys) / math.sqrt(d)
    pos = torch.arange(MB * bs, device=q.device)
    valid = pos[None, :] <= lengths[:, None]  # MISTAKE
    scores = scores.masked_fill(~valid[:, None, :], torch.finfo(scores.dtype).min)
    probs = torch.softmax(scores, dim=-1)
    return torch.einsum("bht,bthd->bhd", probs, vals)
