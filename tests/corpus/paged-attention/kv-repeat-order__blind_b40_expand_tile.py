import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    _, bs, Hkv, _ = k_cache.shape
    n_rep = H // Hkv
    T = block_table.shape[1] * bs

    def repeat_kv(x):  # (B, T, Hkv, d) -> (B, T, H, d)
        return x[:, :, None].expand(B, T, n_rep, Hkv, d).reshape(B, T, H, d)  # MISTAKE

    k = repeat_kv(k_cache[block_table].flatten(1, 2))
    v = repeat_kv(v_cache[block_table].flatten(1, 2))
    scores = torch.einsum("bhd,bthd->bht", q, k) * d ** -0.5
    valid = torch.arange(T, device=q.device)[None, :] < lengths[:, None]
    scores = scores.masked_fill(~valid[:, None, :], torch.finfo(q.dtype).min)
    scores = scores - scores.amax(dim=-1, keepdim=True)
    p = scores.exp()
    p = p / p.sum(dim=-1, keepdim=True)
    return torch.einsum("bht,bthd->bhd", p, v)
