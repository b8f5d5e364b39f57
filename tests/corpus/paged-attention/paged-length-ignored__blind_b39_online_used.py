import torch


def paged_attention(q, k_cache, v_cache, block_table, lengths):
    B, H, d = q.shape
    bs, n_kv = k_cache.shape[1], k_cache.shape[2]
    g = H // n_kv
    out = torch.zeros_like(q)
    for b in range(B):
        n_tok = int(lengths[b])
        n_blk = -(-n_tok // bs)
        qb = q[b].view(n_kv, g, d) / d ** 0.5
        run_max = torch.full((n_kv, g), float("-inf"), dtype=q.dtype, device=q.device)
        run_sum = torch.zeros((n_kv, g), dtype=q.dtype, device=q.device)
        acc = torch.zeros((n_kv, g, d), dtype=q.dtype, device=q.device)
        for n in range(n_blk):
            page = block_table[b, n]
            used = min(bs, n_tok)  # MISTAKE
            kb = k_cache[page, :used].transpose(0, 1)  # (Hkv, used, d)
            vb = v_cache[page, :used].transpose(0, 1)
            s = qb @ kb.transpose(-1, -2)
            new_max = torch.maximum(run_max, s.amax(-1))
            corr = (run_max - new_max).exp()
            p = (s - new_max[..., None]).exp()
            run_sum = run_sum * corr + p.sum(-1)
            acc = acc * corr[..., None] + p @ vb
            run_max = new_max
        out[b] = (acc / run_sum[..., None]).reshape(H, d)
    return out
