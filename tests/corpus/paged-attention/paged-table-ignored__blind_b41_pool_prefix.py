import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    num_blocks, block_size, num_kv_heads, _ = k_cache.shape
    scale = 1.0 / (d ** 0.5)
    outs = []
    for b in range(B):
        n = int(lengths[b].item())
        n_blk = (n + block_size - 1) // block_size
        blocks_k = k_cache[:n_blk]  # MISTAKE
        blocks_v = v_cache[:n_blk]
        k = blocks_k.reshape(-1, num_kv_heads, d)[:n]
        v = blocks_v.reshape(-1, num_kv_heads, d)[:n]
        k = torch.repeat_interleave(k, H // num_kv_heads, dim=1)
        v = torch.repeat_interleave(v, H // num_kv_heads, dim=1)
        s = (k * q[b]).sum(-1) * scale
        s = s - s.max(dim=0, keepdim=True).values
        w = torch.exp(s)
        w = w / w.sum(dim=0, keepdim=True)
        outs.append((w[..., None] * v).sum(0))
    return torch.stack(outs)
