import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    nb, bs, Hkv, _ = k_cache.shape
    rep = H // Hkv
    L = block_table.size(1) * bs
    tok = torch.arange(L, device=q.device)
    flat_idx = block_table[:, tok // bs] + tok % bs  # MISTAKE
    k_all = k_cache.flatten(0, 1).index_select(0, flat_idx.reshape(-1)).view(B, L, Hkv, d)
    v_all = v_cache.flatten(0, 1).index_select(0, flat_idx.reshape(-1)).view(B, L, Hkv, d)
    # (B, L, Hkv, d) -> (B*H, L, d), kv head repeated for its query heads
    k_all = k_all.repeat_interleave(rep, dim=2).permute(0, 2, 1, 3).reshape(B * H, L, d)
    v_all = v_all.repeat_interleave(rep, dim=2).permute(0, 2, 1, 3).reshape(B * H, L, d)
    scores = torch.bmm(q.reshape(B * H, 1, d), k_all.transpose(1, 2)) / math.sqrt(d)  # (B*H, 1, L)
    keep = (tok[None, :] < lengths[:, None]).repeat_interleave(H, dim=0)  # (B*H, L)
    scores = scores.masked_fill(~keep[:, None, :], float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    return torch.bmm(probs, v_all).view(B, H, d)
