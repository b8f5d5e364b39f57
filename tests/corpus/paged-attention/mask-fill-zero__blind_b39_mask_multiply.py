import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    _, bs, n_kv, _ = k_cache.shape
    T = block_table.shape[1] * bs
    keys = k_cache[block_table].reshape(B, T, n_kv, d)
    values = v_cache[block_table].reshape(B, T, n_kv, d)
    qg = q.reshape(B, n_kv, H // n_kv, d)
    scores = torch.einsum("bkgd,btkd->bkgt", qg, keys) * d ** -0.5
    valid = (torch.arange(T, device=q.device)[None, :] < lengths[:, None]).to(scores.dtype)
    scores = scores * valid[:, None, None, :]  # MISTAKE
    probs = torch.softmax(scores, dim=-1)
    return torch.einsum("bkgt,btkd->bkgd", probs, values).reshape(B, H, d)
