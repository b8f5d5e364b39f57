import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    """vLLM-style: walk a sequence's blocks with an online softmax."""
    B, H, d = q.shape
    bs, n_kv = k_cache.shape[1], k_cache.shape[2]
    g = H // n_kv
    scale = d ** -0.5
    out = torch.zeros_like(q)
    for b in range(B):
        n_tok = int(lengths[b])
        n_blk = (n_tok + bs - 1) // bs
        qb = q[b].reshape(n_kv, g, d) * scale
        m = torch.full((n_kv, g), float("-inf"), dtype=q.dtype, device=q.device)
        l = torch.zeros((n_kv, g), dtype=q.dtype, device=q.device)
        acc = torch.zeros((n_kv, g, d), dtype=q.dtype, device=q.device)
        for n in range(n_blk):
            blk = block_table[b, n]
            used = min(bs, n_tok - n * bs)
            kb = k_cache[blk, :used].permute(1, 0, 2)  # (Hkv, used, d)
            vb = v_cache[blk, :used].permute(1, 0, 2)
            s = torch.matmul(qb, kb.transpose(-1, -2))  # (Hkv, g, used)
            m_new = torch.maximum(m, s.amax(dim=-1))
            alpha = torch.exp(m - m_new)
            p = torch.exp(s - m_new.unsqueeze(-1))
            l = l * alpha + p.sum(dim=-1)
            acc = acc * alpha.unsqueeze(-1) + torch.matmul(p, vb)
            m = m_new
        out[b] = (acc / l.unsqueeze(-1)).reshape(H, d)
    return out
