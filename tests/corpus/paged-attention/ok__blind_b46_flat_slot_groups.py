import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    num_blocks, block_size, Hkv, _ = k_cache.shape
    G = H // Hkv
    max_len = block_table.shape[1] * block_size
    pos = torch.arange(max_len, device=q.device)
    # physical slot of every logical token, in the pool seen as one long (num_blocks * block_size) array
    slot_ids = block_table[:, pos // block_size] * block_size + pos % block_size  # (B, L)
    k = k_cache.reshape(num_blocks * block_size, Hkv, d)[slot_ids]  # (B, L, Hkv, d)
    v = v_cache.reshape(num_blocks * block_size, Hkv, d)[slot_ids]
    qg = q.reshape(B, Hkv, G, d)  # heads h = kv * G + g share kv head kv
    scores = torch.einsum("bkgd,blkd->bkgl", qg, k) * (1.0 / math.sqrt(d))
    visible = pos[None, :] < lengths[:, None]  # (B, L)
    scores = scores.masked_fill(~visible[:, None, None, :], float("-inf"))
    w = torch.softmax(scores, dim=-1)
    out = torch.einsum("bkgl,blkd->bkgd", w, v)
    return out.reshape(B, H, d)
