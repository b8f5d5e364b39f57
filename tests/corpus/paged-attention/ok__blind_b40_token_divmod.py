import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    batch, n_heads, head_dim = q.shape
    block_size = k_cache.size(1)
    n_kv = k_cache.size(2)
    per_kv = n_heads // n_kv
    outputs = []
    for b in range(batch):
        keys, values = [], []
        for t in range(int(lengths[b].item())):
            blk_idx, slot = divmod(t, block_size)
            phys = block_table[b, blk_idx]
            keys.append(k_cache[phys, slot])  # (Hkv, d)
            values.append(v_cache[phys, slot])
        K = torch.stack(keys)  # (L, Hkv, d)
        V = torch.stack(values)
        heads = []
        for h in range(n_heads):
            g = h // per_kv
            logits = (K[:, g, :] @ q[b, h]) * head_dim ** -0.5  # (L,)
            w = torch.exp(logits - torch.logsumexp(logits, dim=0))
            heads.append(w @ V[:, g, :])
        outputs.append(torch.stack(heads))
    return torch.stack(outputs)
