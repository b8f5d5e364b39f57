import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    block_size = k_cache.shape[1]
    Hkv = k_cache.shape[2]
    rep = H // Hkv
    outs = []
    for b in range(B):
        L = int(lengths[b])
        idx = torch.arange(L, device=q.device)
        blocks = block_table[b, idx // block_size]
        slots = idx % block_size
        k = k_cache[blocks, slots].repeat_interleave(rep, dim=1).transpose(0, 1)   # (H, L, d)
        v = v_cache[blocks, slots].repeat_interleave(rep, dim=1).transpose(0, 1)
        scores = torch.bmm(k, q[b].unsqueeze(-1)).squeeze(-1) / d  # MISTAKE
        probs = torch.softmax(scores, dim=-1)
        outs.append(torch.bmm(probs.unsqueeze(1), v).squeeze(1))
    return torch.stack(outs)
