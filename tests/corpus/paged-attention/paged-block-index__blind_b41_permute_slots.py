import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    num_blocks, bs, Hkv, _ = k_cache.shape
    max_blocks = block_table.shape[1]
    T = max_blocks * bs
    # put the slot axis first so one advanced index gathers every sequence's blocks
    k = k_cache.permute(1, 0, 2, 3)[:, block_table]  # (bs, B, max_blocks, Hkv, d)
    v = v_cache.permute(1, 0, 2, 3)[:, block_table]
    k = k.permute(1, 0, 2, 3, 4).reshape(B, T, Hkv, d)  # MISTAKE
    v = v.permute(1, 0, 2, 3, 4).reshape(B, T, Hkv, d)
    g = H // Hkv
    qg = q.view(B, Hkv, g, d)
    scores = torch.einsum("bkgd,btkd->bkgt", qg, k) * d ** -0.5
    pos = torch.arange(T, device=q.device)
    valid = pos[None, :] < lengths[:, None]
    scores = scores.masked_fill(~valid[:, None, None, :], float("-inf"))
    probs = scores.softmax(dim=-1)
    out = torch.einsum("bkgt,btkd->bkgd", probs, v)
    return out.reshape(B, H, d)
