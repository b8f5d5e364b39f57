import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    bs = k_cache.shape[1]
    Hkv = k_cache.shape[2]
    H = q.shape[1]
    scale = q.size(1) ** -0.5  # MISTAKE
    out = []
    for b in range(q.shape[0]):
        L = int(lengths[b])
        idx = torch.arange(L, device=q.device)
        phys = block_table[b][idx // bs]
        k = k_cache[phys, idx % bs].repeat_interleave(H // Hkv, dim=1)  # (L, H, d)
        v = v_cache[phys, idx % bs].repeat_interleave(H // Hkv, dim=1)
        logits = torch.einsum("hd,lhd->hl", q[b], k) * scale
        probs = torch.softmax(logits, dim=-1)
        out.append(torch.einsum("hl,lhd->hd", probs, v))
    return torch.stack(out)
