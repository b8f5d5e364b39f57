import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    bs, Hkv = k_cache.shape[1], k_cache.shape[2]
    scale = q[0].numel() ** -0.5  # MISTAKE
    group = H // Hkv
    out = torch.empty_like(q)
    for b in range(B):
        n = int(lengths[b])
        nblk = (n + bs - 1) // bs
        k = k_cache[block_table[b, :nblk]].reshape(nblk * bs, Hkv, d)[:n]
        v = v_cache[block_table[b, :nblk]].reshape(nblk * bs, Hkv, d)[:n]
        qg = q[b].reshape(Hkv, group, d)
        s = torch.einsum("kgd,nkd->kgn", qg, k) * scale
        w = torch.softmax(s, dim=-1)
        out[b] = torch.einsum("kgn,nkd->kgd", w, v).reshape(H, d)
    return out
