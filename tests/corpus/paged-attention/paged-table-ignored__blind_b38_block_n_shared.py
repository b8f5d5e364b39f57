import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    _, block_size, Hkv, _ = k_cache.shape
    max_blocks = block_table.shape[1]
    P = max_blocks * block_size
    G = H // Hkv

    blocks = torch.arange(max_blocks, device=q.device).expand(B, max_blocks)  # MISTAKE
    k = k_cache[blocks].reshape(B, P, Hkv, d)
    v = v_cache[blocks].reshape(B, P, Hkv, d)

    scores = torch.einsum("bhgd,bphd->bhgp", q.view(B, Hkv, G, d), k) * d ** -0.5
    mask = torch.arange(P, device=q.device)[None, :] < lengths[:, None]
    scores = scores.masked_fill(~mask[:, None, None, :], float("-inf"))
    w = torch.softmax(scores, dim=-1)
    return torch.einsum("bhgp,bphd->bhgd", w, v).reshape(B, H, d)
