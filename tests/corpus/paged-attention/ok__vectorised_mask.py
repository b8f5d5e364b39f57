"""Every block gathered, then a length mask."""

import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    bs, Hkv = k_cache.shape[1], k_cache.shape[2]
    T = block_table.shape[1] * bs
    t = torch.arange(T, device=q.device)
    k = k_cache[block_table[:, t // bs], t % bs].repeat_interleave(H // Hkv, dim=2)
    v = v_cache[block_table[:, t // bs], t % bs].repeat_interleave(H // Hkv, dim=2)
    s = torch.einsum("bhd,bthd->bht", q, k) / math.sqrt(d)
    s = s.masked_fill((t[None, :] >= lengths[:, None])[:, None, :], float("-inf"))
    return torch.einsum("bht,bthd->bhd", torch.softmax(s, dim=-1), v)
