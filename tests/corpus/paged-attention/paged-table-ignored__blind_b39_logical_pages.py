import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    block_size, kv_heads = k_cache.shape[1], k_cache.shape[2]
    group = H // kv_heads
    scale = d ** -0.5
    out = torch.empty_like(q)
    for b in range(B):
        table = block_table[b]
        length = int(lengths[b])
        n_pages = (length + block_size - 1) // block_size
        k_parts, v_parts = [], []
        for n in range(n_pages):
            take = min(block_size, length - n * block_size)
            kp, vp = k_cache[n], v_cache[n]  # MISTAKE
            k_parts.append(kp[:take])
            v_parts.append(vp[:take])
        k = torch.cat(k_parts)  # (L, Hkv, d)
        v = torch.cat(v_parts)
        for h in range(H):
            s = (k[:, h // group] @ q[b, h]) * scale
            w = torch.softmax(s, dim=0)
            out[b, h] = w @ v[:, h // group]
    return out
