"""vLLM's paged attention, one decode step: a model answer.

The KV cache is not one (B, T, ...) tensor per batch but a pool of fixed-size blocks shared by every sequence,
handed out as sequences grow (no memory reserved for a maximum length, none wasted but the last block's tail).
block_table[b, n] says which pool block holds sequence b's tokens n * block_size .. (n + 1) * block_size - 1.
Gather each sequence's keys and values through its table, then attend, hiding what lies past its length: the
last block's tail and the table's unused entries point at other data.
"""

import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    """q (B, H, d); k_cache, v_cache (num_blocks, block_size, Hkv, d); block_table int64 (B, max_blocks);
    lengths int64 (B,). Returns (B, H, d)."""
    B, H, d = q.shape
    _, block_size, Hkv, _ = k_cache.shape
    T = block_table.size(1) * block_size  # every token position a table can address
    t = torch.arange(T, device=q.device)  # (T,)
    blocks = block_table[:, t // block_size]  # (B, T): the pool block holding token t of each sequence
    slots = t % block_size  # (T,): its place in that block
    k = k_cache[blocks, slots]  # (B, T, Hkv, d)
    v = v_cache[blocks, slots]  # (B, T, Hkv, d)
    # query head h reads kv head h // (H // Hkv), as in gqa
    k = k.repeat_interleave(H // Hkv, dim=2)  # (B, T, H, d)
    v = v.repeat_interleave(H // Hkv, dim=2)
    scores = torch.einsum("bhd,bthd->bht", q, k) / math.sqrt(d)  # (B, H, T)
    # a sequence sees its first lengths[b] tokens; the rest of its last block, and the blocks past it, hold others'
    valid = t[None, :] < lengths[:, None]  # (B, T)
    scores = scores.masked_fill(~valid[:, None, :], float("-inf"))
    weights = torch.softmax(scores, dim=-1)  # (B, H, T)
    return torch.einsum("bht,bthd->bhd", weights, v)  # (B, H, d)
