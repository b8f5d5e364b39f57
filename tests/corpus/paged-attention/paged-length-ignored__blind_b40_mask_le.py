import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    num_blocks, bs, Hkv, _ = k_cache.shape
    max_blocks = block_table.shape[1]
    offs = torch.arange(bs, device=q.device)
    slot_ids = (block_table[:, :, None] * bs + offs).reshape(B, -1)  # (B, T)
    k = k_cache.flatten(0, 1)[slot_ids]  # (B, T, Hkv, d)
    v = v_cache.flatten(0, 1)[slot_ids]
    k = k.repeat_interleave(H // Hkv, dim=2)
    v = v.repeat_interleave(H // Hkv, dim=2)
    scores = torch.einsum("bhd,bthd->bht", q, k) / math.sqrt(d)
    pos = torch.arange(max_blocks * bs, device=q.device)
    mask = pos[None, :] <= lengths[:, None]  # MISTAKE
    scores = scores.masked_fill(~mask[:, None, :], float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    return torch.einsum("bht,bthd->bhd", probs, v)
