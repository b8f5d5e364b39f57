import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    num_blocks, bs, Hkv, _ = k_cache.shape
    # gather whole tables, then trim to the longest sequence of the batch
    T = int(lengths.max())
    k = k_cache[block_table].reshape(B, -1, Hkv, d)[:, :T]  # MISTAKE
    v = v_cache[block_table].reshape(B, -1, Hkv, d)[:, :T]
    g = H // Hkv
    qg = q.view(B, Hkv, g, d)
    scores = torch.einsum("bkgd,btkd->bkgt", qg, k) / d ** 0.5
    probs = scores.softmax(dim=-1)
    out = torch.einsum("bkgt,btkd->bkgd", probs, v)
    return out.reshape(B, H, d)
