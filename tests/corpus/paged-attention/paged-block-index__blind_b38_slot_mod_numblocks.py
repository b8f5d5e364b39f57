import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    num_blocks, block_size, Hkv, d = k_cache.shape
    B, H, _ = q.shape
    G = H // Hkv
    k_flat = k_cache.reshape(-1, Hkv, d)
    v_flat = v_cache.reshape(-1, Hkv, d)
    res = []
    for b in range(B):
        t = torch.arange(int(lengths[b]), device=q.device)
        slot_mapping = block_table[b, t // block_size] * block_size + t % num_blocks  # MISTAKE
        k = k_flat[slot_mapping].transpose(0, 1)          # (Hkv, L, d)
        v = v_flat[slot_mapping].transpose(0, 1)
        k = k[:, None].expand(-1, G, -1, -1).reshape(H, -1, d)
        v = v[:, None].expand(-1, G, -1, -1).reshape(H, -1, d)
        scores = torch.einsum("hd,hld->hl", q[b], k) / math.sqrt(d)
        probs = torch.softmax(scores, dim=-1)
        res.append(torch.einsum("hl,hld->hd", probs, v))
    return torch.stack(res)
