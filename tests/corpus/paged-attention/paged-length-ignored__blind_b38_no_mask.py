import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    num_blocks, block_size, Hkv, _ = k_cache.shape
    max_blocks = block_table.shape[1]
    G = H // Hkv

    k = k_cache[block_table].reshape(B, max_blocks * block_size, Hkv, d)
    v = v_cache[block_table].reshape(B, max_blocks * block_size, Hkv, d)

    qg = q.view(B, Hkv, G, d)
    scores = torch.einsum("bkgd,btkd->bkgt", qg, k) / d ** 0.5
    probs = scores.softmax(dim=-1)  # MISTAKE
    out = torch.einsum("bkgt,btkd->bkgd", probs, v)
    return out.reshape(B, H, d)
