import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    num_blocks, block_size, num_kv_heads, _ = k_cache.shape
    group = H // num_kv_heads
    k_flat = k_cache.reshape(-1, num_kv_heads, d)
    v_flat = v_cache.reshape(-1, num_kv_heads, d)
    out = torch.empty_like(q)
    for b in range(B):
        n = int(lengths[b])
        pos = torch.arange(n, device=q.device)
        phys = block_table[b, pos // block_size]
        offset = pos % block_size
        flat = offset * num_blocks + phys  # MISTAKE
        k = k_flat[flat].repeat_interleave(group, dim=1).transpose(0, 1)  # (H, n, d)
        v = v_flat[flat].repeat_interleave(group, dim=1).transpose(0, 1)
        att = (k @ q[b].unsqueeze(-1)).squeeze(-1) / d ** 0.5  # (H, n)
        att = att.softmax(-1)
        out[b] = (att.unsqueeze(1) @ v).squeeze(1)
    return out
