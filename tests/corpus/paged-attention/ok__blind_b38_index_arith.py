import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    block_size, Hkv = k_cache.shape[1], k_cache.shape[2]
    n_rep = H // Hkv

    T = int(lengths.max())
    t = torch.arange(T, device=q.device)
    blk = block_table[:, t // block_size]           # (B, T) physical block ids
    slot = (t % block_size).expand(B, T)            # (B, T) offsets inside blocks
    k = k_cache[blk, slot].permute(0, 2, 1, 3)      # (B, Hkv, T, d)
    v = v_cache[blk, slot].permute(0, 2, 1, 3)

    k = k[:, :, None].expand(B, Hkv, n_rep, T, d).reshape(B, H, T, d)
    v = v[:, :, None].expand(B, Hkv, n_rep, T, d).reshape(B, H, T, d)

    scores = (q.unsqueeze(2) @ k.transpose(-2, -1)).squeeze(2) * d ** -0.5   # (B, H, T)
    keep = t[None, :] < lengths[:, None]            # (B, T)
    scores = scores.masked_fill(~keep[:, None, :], torch.finfo(scores.dtype).min)
    w = torch.softmax(scores, dim=-1)
    return (w.unsqueeze(2) @ v).squeeze(2)
