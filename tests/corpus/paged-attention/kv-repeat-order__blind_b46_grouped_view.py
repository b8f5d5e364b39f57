import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    block_size, Hkv = k_cache.shape[1], k_cache.shape[2]
    G = H // Hkv
    t = torch.arange(block_table.shape[1] * block_size, device=q.device)
    blk = block_table[:, t // block_size]  # (B, T)
    off = t % block_size
    k = k_cache[blk, off]  # (B, T, Hkv, d)
    v = v_cache[blk, off]
    qg = q.reshape(B, G, Hkv, d)  # MISTAKE
    sc = torch.einsum("bgkd,btkd->bgkt", qg, k) / math.sqrt(d)
    live = t[None, :] < lengths[:, None]  # (B, T)
    sc = sc.masked_fill(~live[:, None, None, :], float("-inf"))
    pr = torch.softmax(sc, dim=-1)
    o = torch.einsum("bgkt,btkd->bgkd", pr, v)
    return o.reshape(B, H, d)
