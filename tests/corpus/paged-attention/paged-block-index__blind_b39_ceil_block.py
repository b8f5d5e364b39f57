import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    num_blocks, block_size, kv_heads, _ = k_cache.shape
    k_flat = k_cache.reshape(num_blocks * block_size, kv_heads, d)
    v_flat = v_cache.reshape(num_blocks * block_size, kv_heads, d)
    heads_per_kv = H // kv_heads
    out = q.new_empty(B, H, d)
    for b in range(B):
        L = int(lengths[b])
        pos = torch.arange(L, device=block_table.device)
        logical = (pos + block_size - 1) // block_size  # MISTAKE
        slot_mapping = block_table[b, logical] * block_size + pos % block_size
        k = k_flat[slot_mapping].repeat_interleave(heads_per_kv, dim=1)  # (L, H, d)
        v = v_flat[slot_mapping].repeat_interleave(heads_per_kv, dim=1)
        logits = (k * q[b]).sum(-1) * d ** -0.5  # (L, H)
        probs = torch.softmax(logits, dim=0)
        out[b] = (probs.unsqueeze(-1) * v).sum(0)
    return out
