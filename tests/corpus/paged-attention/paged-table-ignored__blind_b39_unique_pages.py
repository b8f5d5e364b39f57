import torch
import torch.nn.functional as F


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    bs, n_kv = k_cache.shape[1], k_cache.shape[2]
    out = torch.zeros_like(q)
    for b in range(B):
        L = int(lengths[b])
        n_pages = -(-L // bs)
        pages = block_table[b, :n_pages].unique()  # MISTAKE
        k = k_cache.index_select(0, pages).flatten(0, 1)[:L]  # (L, Hkv, d)
        v = v_cache.index_select(0, pages).flatten(0, 1)[:L]
        k = k.repeat_interleave(H // n_kv, dim=1).permute(1, 0, 2)  # (H, L, d)
        v = v.repeat_interleave(H // n_kv, dim=1).permute(1, 0, 2)
        scores = torch.bmm(k, q[b].unsqueeze(-1)).squeeze(-1) * (1.0 / d ** 0.5)
        probs = F.softmax(scores, dim=-1)
        out[b] = torch.bmm(probs.unsqueeze(1), v).squeeze(1)
    return out
