import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    _, block_size, Hkv, _ = k_cache.shape
    T = block_table.shape[1] * block_size
    k = k_cache[block_table].view(B, T, Hkv, d)
    v = v_cache[block_table].view(B, T, Hkv, d)
    head_map = torch.arange(H, device=q.device) % Hkv  # MISTAKE
    k = k[:, :, head_map].transpose(1, 2)  # (B, H, T, d)
    v = v[:, :, head_map].transpose(1, 2)
    scores = (k @ q.unsqueeze(-1)).squeeze(-1) / math.sqrt(d)  # (B, H, T)
    live = torch.arange(T, device=q.device).unsqueeze(0) < lengths.unsqueeze(1)
    scores = scores.masked_fill(~live.unsqueeze(1), float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    return (probs.unsqueeze(-2) @ v).squeeze(-2)
