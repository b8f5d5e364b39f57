import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    num_blocks, block_size, Hkv, _ = k_cache.shape
    max_blocks = block_table.shape[1]
    G = H // Hkv
    P = max_blocks * block_size

    # gather every block the table names, then mask by length
    k = k_cache[block_table].reshape(B, P, Hkv, d)
    v = v_cache[block_table].reshape(B, P, Hkv, d)

    qg = q.view(B, Hkv, G, d)                       # query head h -> kv head h // G
    scores = torch.einsum("bkgd,btkd->bkgt", qg, k) / d ** 0.5

    pos = torch.arange(P, device=q.device)
    valid = pos[None, :] < lengths[:, None]         # (B, P)
    scores = scores.masked_fill(~valid[:, None, None, :], float("-inf"))
    probs = scores.softmax(dim=-1)

    out = torch.einsum("bkgt,btkd->bkgd", probs, v)
    return out.reshape(B, H, d)
