import math

import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    bs, Hkv = k_cache.shape[1], k_cache.shape[2]
    group = H // Hkv
    outputs = []
    first_page = 0
    for b in range(B):
        L = int(lengths[b])
        n_pages = math.ceil(L / bs)
        pages = torch.arange(first_page, first_page + n_pages, device=k_cache.device)  # MISTAKE
        first_page += n_pages
        k = k_cache[pages].reshape(-1, Hkv, d)[:L]
        v = v_cache[pages].reshape(-1, Hkv, d)[:L]
        qh = q[b].view(Hkv, group, d)
        att = torch.einsum("kgd,tkd->kgt", qh, k) / math.sqrt(d)
        att = att.softmax(dim=-1)
        outputs.append(torch.einsum("kgt,tkd->kgd", att, v).reshape(H, d))
    return torch.stack(outputs)
