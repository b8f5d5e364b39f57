import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    _, block_size, Hkv, _ = k_cache.shape
    group = H // Hkv
    out = []
    for b in range(B):
        n = int(lengths[b])
        used = math.ceil(n / block_size)
        pages = torch.arange(used, device=q.device)  # MISTAKE
        k = k_cache[pages].reshape(-1, Hkv, d)[:n]  # (n, Hkv, d)
        v = v_cache[pages].reshape(-1, Hkv, d)[:n]
        k = k.repeat_interleave(group, dim=1).transpose(0, 1)  # (H, n, d)
        v = v.repeat_interleave(group, dim=1).transpose(0, 1)
        qb = q[b].unsqueeze(1)  # (H, 1, d)
        att = (qb @ k.transpose(1, 2)) / math.sqrt(d)  # (H, 1, n)
        att = torch.softmax(att, dim=-1)
        out.append((att @ v).squeeze(1))  # (H, d)
    return torch.stack(out, dim=0)
