import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    num_blocks, block_size, Hkv, _ = k_cache.shape
    # vLLM-style slot mapping into the flattened pool
    k_flat = k_cache.reshape(num_blocks * block_size, Hkv, d)
    v_flat = v_cache.reshape(num_blocks * block_size, Hkv, d)
    out = torch.empty_like(q)
    for b in range(B):
        L = int(lengths[b])
        t = torch.arange(L, device=q.device)
        slot_mapping = block_table[b, t // block_size] + t % block_size  # MISTAKE
        k = k_flat[slot_mapping].repeat_interleave(H // Hkv, dim=1)  # (L, H, d)
        v = v_flat[slot_mapping].repeat_interleave(H // Hkv, dim=1)
        att = torch.einsum("hd,thd->ht", q[b], k) / d ** 0.5
        att = torch.softmax(att, dim=-1)
        out[b] = torch.einsum("ht,thd->hd", att, v)
    return out
