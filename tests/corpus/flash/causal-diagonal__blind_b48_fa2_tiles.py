import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    # FlashAttention-2 style: outer loop over query tiles, inner loop over key tiles
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    sm_scale = 1.0 / math.sqrt(d)
    acc_dtype = torch.promote_types(q.dtype, torch.float32)
    offset = Tk - Tq
    out_tiles = []
    for qs in range(0, Tq, block_size):
        qe = min(qs + block_size, Tq)
        Qi = q[:, :, qs:qe].to(acc_dtype)
        Oi = torch.zeros(B, H, qe - qs, d, dtype=acc_dtype, device=q.device)
        li = torch.zeros(B, H, qe - qs, 1, dtype=acc_dtype, device=q.device)
        mi = torch.full((B, H, qe - qs, 1), -float("inf"), dtype=acc_dtype, device=q.device)
        q_pos = torch.arange(qs, qe, device=q.device) + offset
        for ks in range(0, Tk, block_size):
            ke = min(ks + block_size, Tk)
            Kj = k[:, :, ks:ke].to(acc_dtype)
            Vj = v[:, :, ks:ke].to(acc_dtype)
            Sij = (Qi @ Kj.transpose(-1, -2)) * sm_scale
            if causal:
                k_pos = torch.arange(ks, ke, device=q.device)
                Sij = Sij.masked_fill(k_pos[None, :] >= q_pos[:, None], -float("inf"))  # MISTAKE: >= hides the diagonal, should be >
            m_new = torch.maximum(mi, Sij.amax(dim=-1, keepdim=True))
            m_safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
            Pij = torch.exp(Sij - m_safe)
            corr = torch.exp(mi - m_safe)
            li = corr * li + Pij.sum(dim=-1, keepdim=True)
            Oi = corr * Oi + Pij @ Vj
            mi = m_new
        out_tiles.append(Oi / torch.where(li == 0, torch.ones_like(li), li))
    return torch.cat(out_tiles, dim=2).to(q.dtype)
