import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    bs, Hkv = k_cache.shape[1], k_cache.shape[2]
    head_map = torch.arange(H, device=q.device) // (H // Hkv)
    outs = []
    for b in range(B):
        L = int(lengths[b])
        pos = torch.arange(L, device=q.device)
        phys = block_table[b, pos // bs]
        keys = k_cache[phys, pos % bs][:, head_map]
        vals = v_cache[phys, pos % bs][:, head_map]
        logits = (keys * q[b].unsqueeze(0)).sum(dim=-1) / math.sqrt(d)
        w = torch.softmax(logits, dim=0)
        outs.append((w.unsqueeze(-1) * vals).sum(dim=0))
    return torch.stack(outs, dim=0)
