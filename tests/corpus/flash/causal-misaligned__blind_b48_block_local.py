import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H, Tq, d = q.size()
    Tk = k.size(2)
    dtype = q.dtype
    f = torch.promote_types(dtype, torch.float32)
    qf, kf, vf = q.to(f), k.to(f), v.to(f)
    scale = d ** -0.5

    m = qf.new_full((B, H, Tq, 1), float("-inf"))
    denom = qf.new_zeros((B, H, Tq, 1))
    numer = qf.new_zeros((B, H, Tq, d))
    rows = torch.arange(Tq, device=q.device).view(-1, 1) + (Tk - Tq)

    for blk in range(0, Tk, block_size):
        kb = kf[:, :, blk : blk + block_size]
        vb = vf[:, :, blk : blk + block_size]
        s = torch.matmul(qf, kb.transpose(-2, -1)) * scale
        if causal:
            cols = torch.arange(kb.size(2), device=q.device).view(1, -1)  # MISTAKE: key index local to the block, should start at blk
            s = s.masked_fill(cols > rows, float("-inf"))
        m_blk = s.amax(dim=-1, keepdim=True)
        m_new = torch.max(m, m_blk)
        m_use = m_new.masked_fill(torch.isneginf(m_new), 0.0)
        p = (s - m_use).exp()
        alpha = (m - m_use).exp()
        denom = alpha * denom + p.sum(dim=-1, keepdim=True)
        numer = alpha * numer + torch.matmul(p, vb)
        m = m_new

    out = numer / denom.clamp_min(torch.finfo(f).tiny)
    return out.to(dtype)
