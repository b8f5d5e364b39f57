import math

import torch


def _gather(cache, block_table):
    B, nb = block_table.shape
    _, bs, Hkv, d = cache.shape
    return cache[block_table].transpose(1, 2).reshape(B, nb * bs, Hkv, d)  # MISTAKE


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    Hkv = k_cache.shape[2]
    g = H // Hkv
    keys = _gather(k_cache, block_table).permute(0, 2, 3, 1)
    values = _gather(v_cache, block_table).permute(0, 2, 1, 3)
    T = keys.shape[-1]
    qg = q.view(B, Hkv, g, d)
    scores = torch.matmul(qg, keys) / math.sqrt(d)
    visible = torch.arange(T, device=q.device)[None, :] < lengths[:, None]
    scores = scores.masked_fill(~visible[:, None, None, :], float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    out = torch.matmul(probs, values)
    return out.reshape(B, H, d)
