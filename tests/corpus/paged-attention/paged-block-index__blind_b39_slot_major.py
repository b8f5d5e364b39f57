import torch


def _pages(cache, block_table):
    pages = cache[block_table]                  # (B, max_blocks, block_size, Hkv, d)
    return pages.transpose(1, 2).flatten(1, 2)  # MISTAKE


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    n_kv = k_cache.shape[2]
    k = _pages(k_cache, block_table)  # (B, T, Hkv, d)
    v = _pages(v_cache, block_table)
    T = k.shape[1]
    qg = q.view(B, n_kv, H // n_kv, d)
    scores = torch.einsum("bkgd,btkd->bkgt", qg, k) / d ** 0.5
    keep = torch.arange(T, device=q.device)[None, :] < lengths[:, None]
    scores = scores.masked_fill(~keep[:, None, None, :], float("-inf"))
    attn = scores.softmax(dim=-1)
    return torch.einsum("bkgt,btkd->bkgd", attn, v).reshape(B, H, d)
