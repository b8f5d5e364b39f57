import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    bs, Hkv = k_cache.shape[1], k_cache.shape[2]
    rep = H // Hkv
    out = torch.empty_like(q)

    def tokens(cache, ids, L):
        seq = cache[ids].flatten(0, 1)  # (n_blocks * bs, Hkv, d)
        return seq[-L:]  # MISTAKE

    for b in range(B):
        L = int(lengths[b])
        n_blocks = -(-L // bs)
        ids = block_table[b, :n_blocks]
        k = tokens(k_cache, ids, L).repeat_interleave(rep, dim=1)
        v = tokens(v_cache, ids, L).repeat_interleave(rep, dim=1)
        logits = (k * q[b]).sum(-1) / d ** 0.5  # (L, H)
        w = torch.softmax(logits, dim=0)
        out[b] = (w[..., None] * v).sum(0)
    return out
