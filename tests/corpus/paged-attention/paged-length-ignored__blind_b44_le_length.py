import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    _, bs, Hkv, _ = k_cache.shape
    nb = block_table.shape[1]
    rep = H // Hkv
    k_all = k_cache[block_table].reshape(B, nb * bs, Hkv, d).repeat_interleave(rep, dim=2)
    v_all = v_cache[block_table].reshape(B, nb * bs, Hkv, d).repeat_interleave(rep, dim=2)
    s = torch.einsum("bhd,bthd->bht", q, k_all) * (1.0 / math.sqrt(d))
    pos = torch.arange(nb * bs, device=q.device)
    keep = pos.unsqueeze(0) <= lengths.unsqueeze(1)  # MISTAKE
    s = s.masked_fill(~keep.unsqueeze(1), float("-inf"))
    w = torch.softmax(s, dim=-1)
    return torch.einsum("bht,bthd->bhd", w, v_all)
