import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    Hkv = k_cache.shape[2]
    group = H // Hkv
    outs = []
    for b in range(B):
        L = int(lengths[b])
        k, v = k_cache.view(-1, Hkv, d)[:L], v_cache.view(-1, Hkv, d)[:L]  # MISTAKE
        k = k.transpose(0, 1).repeat_interleave(group, dim=0)     # (H, L, d)
        v = v.transpose(0, 1).repeat_interleave(group, dim=0)
        scores = (k @ q[b][:, :, None])[..., 0] / math.sqrt(d)    # (H, L)
        w = torch.softmax(scores, dim=-1)
        outs.append((w[:, None, :] @ v)[:, 0, :])
    return torch.stack(outs)
