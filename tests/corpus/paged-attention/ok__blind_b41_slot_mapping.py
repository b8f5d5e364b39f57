import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    num_blocks, block_size, num_kv_heads, _ = k_cache.shape
    k_flat = k_cache.reshape(num_blocks * block_size, num_kv_heads, d)
    v_flat = v_cache.reshape(num_blocks * block_size, num_kv_heads, d)
    scale = 1.0 / (d ** 0.5)
    outs = []
    for b in range(B):
        n = int(lengths[b].item())
        pos = torch.arange(n, device=q.device)
        slots = block_table[b, pos // block_size] * block_size + pos % block_size
        k = torch.repeat_interleave(k_flat[slots], H // num_kv_heads, dim=1)  # (n, H, d)
        v = torch.repeat_interleave(v_flat[slots], H // num_kv_heads, dim=1)
        s = (k * q[b]).sum(-1) * scale  # (n, H)
        s = s - s.max(dim=0, keepdim=True).values
        w = torch.exp(s)
        w = w / w.sum(dim=0, keepdim=True)
        outs.append((w[..., None] * v).sum(0))  # (H, d)
    return torch.stack(outs)
