import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    scale = d ** -0.5
    in_dtype = q.dtype
    acc_dtype = torch.promote_types(in_dtype, torch.float32)
    q, k, v = q.to(acc_dtype), k.to(acc_dtype), v.to(acc_dtype)
    neg = torch.finfo(acc_dtype).min

    out_blocks = []
    for qs in range(0, Tq, block_size):
        qe = min(qs + block_size, Tq)
        qb = q[:, :, qs:qe] * scale
        rows = torch.arange(qs, qe, device=q.device) + (Tk - Tq)  # absolute positions of these queries
        m = torch.full((B, H, qe - qs, 1), float("-inf"), dtype=acc_dtype, device=q.device)
        l = torch.zeros((B, H, qe - qs, 1), dtype=acc_dtype, device=q.device)
        o = torch.zeros((B, H, qe - qs, d), dtype=acc_dtype, device=q.device)
        for ks in range(0, Tk, block_size):
            ke = min(ks + block_size, Tk)
            s = qb @ k[:, :, ks:ke].transpose(-1, -2)
            if causal:
                cols = torch.arange(ke - ks, device=q.device)  # MISTAKE: key indices local to the block, not ks..ke-1
                s = torch.where(cols[None, :] <= rows[:, None], s, neg)
            m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
            p = torch.exp(s - m_new)
            corr = torch.exp(m - m_new)
            l = l * corr + p.sum(dim=-1, keepdim=True)
            o = o * corr + p @ v[:, :, ks:ke]
            m = m_new
        out_blocks.append(o / l)
    return torch.cat(out_blocks, dim=2).to(in_dtype)
