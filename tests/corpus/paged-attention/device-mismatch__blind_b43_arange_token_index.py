"""Paged attention that gathers every table slot with a token index from torch.arange made on the CPU and masks by length with it, never moving it to the inputs' device."""
import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    num_blocks, block_size, Hkv, _ = k_cache.shape
    max_blocks = block_table.shape[1]
    t = torch.arange(max_blocks * block_size)  # CPU token index
    blocks = block_table[:, t // block_size]  # (B, T)
    slots = (t % block_size).expand(B, -1)  # (B, T)
    k = k_cache[blocks, slots]  # (B, T, Hkv, d)
    v = v_cache[blocks, slots]
    rep = H // Hkv
    k = k.repeat_interleave(rep, dim=2)  # (B, T, H, d)
    v = v.repeat_interleave(rep, dim=2)
    scores = torch.einsum("bhd,bthd->bht", q, k) / math.sqrt(d)
    valid = t[None, :] < lengths[:, None]  # (B, T)
    scores = scores.masked_fill(~valid[:, None, :], float("-inf"))
    w = torch.softmax(scores, dim=-1)
    return torch.einsum("bht,bthd->bhd", w, v)
