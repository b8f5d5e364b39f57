import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    block_size, n_kv = k_cache.shape[1], k_cache.shape[2]
    max_blocks = block_table.shape[1]
    T = max_blocks * block_size

    def gather(cache):
        blocks = cache[block_table]  # (B, max_blocks, block_size, Hkv, d)
        return blocks.transpose(1, 2).reshape(B, T, n_kv, d)  # MISTAKE

    k = gather(k_cache).repeat_interleave(H // n_kv, dim=2)  # (B, T, H, d)
    v = gather(v_cache).repeat_interleave(H // n_kv, dim=2)
    scores = torch.einsum("bhd,bthd->bht", q, k) * d ** -0.5
    keep = torch.arange(T, device=q.device)[None, :] < lengths[:, None]
    scores = scores.masked_fill(~keep[:, None, :], torch.finfo(scores.dtype).min)
    w = scores.softmax(dim=-1)
    return torch.einsum("bht,bthd->bhd", w, v)
