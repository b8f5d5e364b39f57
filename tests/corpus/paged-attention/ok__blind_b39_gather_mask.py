import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    # gather every block the table names, then mask by length
    B, H, d = q.shape
    _, block_size, num_kv, _ = k_cache.shape
    T = block_table.shape[1] * block_size
    k = k_cache[block_table].reshape(B, T, num_kv, d)
    v = v_cache[block_table].reshape(B, T, num_kv, d)
    qg = q.reshape(B, num_kv, H // num_kv, d)  # consecutive query heads share a kv head
    scores = torch.einsum("bkgd,btkd->bkgt", qg, k) * d ** -0.5
    pos = torch.arange(T, device=q.device)
    visible = pos[None, :] < lengths.to(q.device)[:, None]  # (B, T)
    scores = scores.masked_fill(~visible[:, None, None, :], float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    out = torch.einsum("bkgt,btkd->bkgd", probs, v)
    return out.reshape(B, H, d)
