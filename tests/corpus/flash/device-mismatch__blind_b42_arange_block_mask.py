"""Flash attention whose per-block causal mask comes from torch.arange without device= and is used in torch.where against the (possibly CUDA) score block."""
import math

import torch


def flash_attention(q, k, v, causal: bool = False, block_size: int = 64):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    scale = 1.0 / math.sqrt(d)
    offset = Tk - Tq
    out_blocks = []
    for qs in range(0, Tq, block_size):
        qe = min(qs + block_size, Tq)
        qb = q[:, :, qs:qe] * scale
        m = torch.full((B, H, qe - qs, 1), float("-inf"), dtype=q.dtype, device=q.device)
        l = torch.zeros((B, H, qe - qs, 1), dtype=q.dtype, device=q.device)
        acc = torch.zeros((B, H, qe - qs, v.shape[-1]), dtype=q.dtype, device=q.device)
        qi = torch.arange(qs, qe)[:, None] + offset  # CPU
        for ks in range(0, Tk, block_size):
            ke = min(ks + block_size, Tk)
            if causal and ks > qe - 1 + offset:
                break
            s = qb @ k[:, :, ks:ke].transpose(-2, -1)
            if causal:
                kj = torch.arange(ks, ke)[None, :]  # CPU
                s = torch.where(kj <= qi, s, torch.full_like(s, float("-inf")))
            m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
            p = torch.exp(s - m_new)
            alpha = torch.exp(m - m_new)
            l = l * alpha + p.sum(dim=-1, keepdim=True)
            acc = acc * alpha + p @ v[:, :, ks:ke]
            m = m_new
        out_blocks.append(acc / l)
    return torch.cat(out_blocks, dim=2)
