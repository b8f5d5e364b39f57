import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    bs, Hkv = k_cache.shape[1], k_cache.shape[2]
    kv_of_head = torch.arange(H, device=q.device) // (H // Hkv)
    outs = []
    block_start = 0
    for b in range(B):
        L = int(lengths[b])
        n_blk = (L + bs - 1) // bs
        phys = torch.arange(block_start, block_start + n_blk, device=q.device)  # MISTAKE
        block_start += n_blk
        k = k_cache[phys].flatten(0, 1)[:L][:, kv_of_head]  # (L, H, d)
        v = v_cache[phys].flatten(0, 1)[:L][:, kv_of_head]
        scores = (q[b][None] * k).sum(-1) * (1.0 / d ** 0.5)  # (L, H)
        scores = scores - scores.max(dim=0, keepdim=True).values
        w = scores.exp()
        w = w / w.sum(dim=0, keepdim=True)
        outs.append((w[..., None] * v).sum(dim=0))
    return torch.stack(outs)
