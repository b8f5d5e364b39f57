import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    num_blocks, bs, Hkv, _ = k_cache.shape
    max_blocks = block_table.shape[1]
    T = max_blocks * bs
    k = k_cache[block_table].reshape(B, T, Hkv, d)
    v = v_cache[block_table].reshape(B, T, Hkv, d)
    # the last position is the token being decoded; the context is what came before it
    context_lens = lengths - 1  # MISTAKE
    qg = q.view(B, Hkv, H // Hkv, d)
    scores = torch.einsum("bkgd,btkd->bkgt", qg, k) * d ** -0.5
    valid = torch.arange(T, device=q.device)[None, :] < context_lens[:, None]
    scores = scores.masked_fill(~valid[:, None, None, :], float("-inf"))
    probs = scores.softmax(dim=-1)
    out = torch.einsum("bkgt,btkd->bkgd", probs, v)
    return out.reshape(B, H, d)
