"""Blockwise flash attention whose running max, sum and accumulator come from torch.full_like/zeros_like of the inputs and whose block positions use torch.arange(device=q.device)."""
import math

import torch


def flash_attention(q, k, v, causal: bool = False, block_size: int = 64):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    scale = 1.0 / math.sqrt(d)
    offset = Tk - Tq
    outs = []
    for qs in range(0, Tq, block_size):
        qb = q[:, :, qs:qs + block_size]
        nq = qb.shape[2]
        qpos = torch.arange(qs, qs + nq, device=q.device) + offset
        m = torch.full_like(qb[..., :1], float("-inf"))
        l = torch.zeros_like(m)
        acc = torch.zeros_like(v[:, :, :1]).expand(-1, -1, nq, -1).contiguous()
        for ks in range(0, Tk, block_size):
            if causal and ks > qs + nq - 1 + offset:
                break
            kb = k[:, :, ks:ks + block_size]
            vb = v[:, :, ks:ks + block_size]
            s = (qb @ kb.transpose(-2, -1)) * scale
            if causal:
                kpos = torch.arange(ks, ks + kb.shape[2], device=q.device)
                s = s.masked_fill(kpos[None, :] > qpos[:, None], float("-inf"))
            m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
            m_safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
            p = torch.exp(s - m_safe)
            alpha = torch.exp(m - m_safe)
            l = alpha * l + p.sum(dim=-1, keepdim=True)
            acc = alpha * acc + p @ vb
            m = m_new
        outs.append(acc / l)
    return torch.cat(outs, dim=2)
