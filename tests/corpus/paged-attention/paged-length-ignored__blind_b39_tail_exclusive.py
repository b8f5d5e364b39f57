import math

import torch
import torch.nn.functional as F


def _tokens(cache, pages, tail_page, tail_len):
    full = cache[pages].flatten(0, 1)  # whole blocks before the last one
    return torch.cat([full, cache[tail_page, :tail_len]], dim=0)


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    bs, Hkv = k_cache.shape[1], k_cache.shape[2]
    rep = H // Hkv
    out = []
    for b in range(B):
        last_page, last_slot = divmod(int(lengths[b]) - 1, bs)
        tail_len = last_slot  # MISTAKE
        pages = block_table[b, :last_page]
        tail = block_table[b, last_page]
        k = _tokens(k_cache, pages, tail, tail_len).repeat_interleave(rep, dim=1)
        v = _tokens(v_cache, pages, tail, tail_len).repeat_interleave(rep, dim=1)
        scores = torch.einsum("hd,thd->ht", q[b], k) / math.sqrt(d)
        out.append(torch.einsum("ht,thd->hd", F.softmax(scores, dim=-1), v))
    return torch.stack(out)
