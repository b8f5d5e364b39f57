import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    _, bs, Hkv, _ = k_cache.shape
    max_blocks = block_table.shape[1]
    T = max_blocks * bs
    # gather every block of the table, mask by length afterwards
    k = k_cache[block_table].reshape(B, T, Hkv, d)
    v = v_cache[block_table].reshape(B, T, Hkv, d)
    qg = q.reshape(B, Hkv, H // Hkv, d)
    scores = torch.einsum("bkgd,btkd->bkgt", qg, k) / d ** 0.5
    pos = torch.arange(T, device=q.device)
    valid = pos[None, :] < lengths[:, None]  # (B, T)
    scores = scores.masked_fill(~valid[:, None, None, :], float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    out = torch.einsum("bkgt,btkd->bkgd", probs, v)
    return out.reshape(B, H, d)
