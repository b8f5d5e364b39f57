import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    num_blocks, block_size, Hkv, _ = k_cache.shape
    P = block_table.shape[1] * block_size
    G = H // Hkv

    k = k_cache[block_table].reshape(B, P, Hkv, d)
    v = v_cache[block_table].reshape(B, P, Hkv, d)
    k = k[:, :, :, None, :].expand(B, P, Hkv, G, d).reshape(B, P, H, d)
    v = v[:, :, :, None, :].expand(B, P, Hkv, G, d).reshape(B, P, H, d)

    scores = torch.einsum("bhd,bphd->bhp", q, k)  # MISTAKE
    valid = torch.arange(P, device=q.device)[None, :] < lengths[:, None]
    scores = scores.masked_fill(~valid[:, None, :], float("-inf"))
    weights = scores.softmax(dim=-1)
    return torch.einsum("bhp,bphd->bhd", weights, v)
