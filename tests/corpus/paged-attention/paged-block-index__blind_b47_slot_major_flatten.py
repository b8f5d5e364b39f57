import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    _, block_size, Hkv, _ = k_cache.shape
    max_blocks = block_table.shape[1]

    def tokens_of(cache):
        blocks = cache[block_table]  # (B, max_blocks, block_size, Hkv, d)
        return blocks.transpose(1, 2).reshape(B, max_blocks * block_size, Hkv, d)  # MISTAKE: slot-major, token t is not block t // block_size

    k = tokens_of(k_cache)
    v = tokens_of(v_cache)
    rep = H // Hkv
    k = k.repeat_interleave(rep, dim=2)  # (B, T, H, d)
    v = v.repeat_interleave(rep, dim=2)

    T = max_blocks * block_size
    scores = (q.unsqueeze(2) * k.transpose(1, 2)).sum(-1) / math.sqrt(d)  # (B, H, T)
    live = torch.arange(T, device=q.device)[None, :] < lengths[:, None]
    scores = scores.masked_fill(~live[:, None, :], float("-inf"))
    w = torch.softmax(scores, dim=-1)
    return (w.unsqueeze(-1) * v.transpose(1, 2)).sum(2)
