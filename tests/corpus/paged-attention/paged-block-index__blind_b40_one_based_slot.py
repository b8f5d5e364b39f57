import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    bs, Hkv = k_cache.shape[1], k_cache.shape[2]
    g = H // Hkv
    out = torch.empty_like(q)
    for b in range(B):
        n = int(lengths[b])
        pos = torch.arange(1, n + 1, device=q.device)  # token positions 1..n
        blk = block_table[b, (pos - 1) // bs]
        slot = pos % bs  # MISTAKE
        k = k_cache[blk, slot]  # (n, Hkv, d)
        v = v_cache[blk, slot]
        qh = q[b].reshape(Hkv, g, d)
        s = torch.einsum("kgd,nkd->kgn", qh, k) / d ** 0.5
        s = s - s.max(dim=-1, keepdim=True).values
        e = s.exp()
        p = e / e.sum(dim=-1, keepdim=True)
        out[b] = torch.einsum("kgn,nkd->kgd", p, v).reshape(H, d)
    return out
