"""flash: outer loop over query tiles, inner over key tiles (Tri Dao's loop order)."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    scale = 1.0 / math.sqrt(d)
    out = torch.empty_like(q)
    for qs in range(0, Tq, block_size):
        qb = q[:, :, qs : qs + block_size] * scale
        nq = qb.shape[2]
        last = torch.arange(qs, qs + nq, device=q.device)[:, None] + (Tk - Tq)  # (nq, 1)
        m = torch.full((B, H, nq, 1), float("-inf"), dtype=q.dtype, device=q.device)
        l = torch.zeros(B, H, nq, 1, dtype=q.dtype, device=q.device)
        acc = torch.zeros(B, H, nq, d, dtype=q.dtype, device=q.device)
        for ks in range(0, Tk, block_size):
            kb = k[:, :, ks : ks + block_size]
            vb = v[:, :, ks : ks + block_size]
            s = qb @ kb.transpose(-1, -2)
            if causal:
                idx = torch.arange(ks, ks + kb.shape[2], device=q.device)[None, :]
                s = s.masked_fill(idx > last, float("-inf"))
            m_new = torch.maximum(m, s.amax(-1, keepdim=True))
            base = torch.where(m_new == float("-inf"), torch.zeros_like(m_new), m_new)
            p = torch.exp(s - base)
            alpha = torch.exp(m - base)
            l = alpha * l + p.sum(-1, keepdim=True)
            acc = alpha * acc + p @ vb
            m = m_new
        out[:, :, qs : qs + nq] = acc  # MISTAKE
    return out
