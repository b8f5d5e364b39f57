"""Tiles both axes, as the GPU kernels do: an outer loop over query blocks, an inner one over key blocks."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H, Tq, d = q.size()
    Tk = k.size(2)
    offset = Tk - Tq
    outs = []
    for i0 in range(0, Tq, block_size):
        qb = q[:, :, i0:i0 + block_size] / math.sqrt(d)
        n = qb.size(2)
        m = qb.new_full((B, H, n), -math.inf)
        l = qb.new_zeros((B, H, n))
        acc = qb.new_zeros((B, H, n, d))
        last = i0 + n - 1 + offset if causal else Tk - 1
        for j0 in range(0, min(Tk, last + 1), block_size):
            kb, vb = k[:, :, j0:j0 + block_size], v[:, :, j0:j0 + block_size]
            s = torch.einsum("bhid,bhjd->bhij", qb, kb)
            if causal:
                i = torch.arange(i0, i0 + n, device=q.device)
                j = torch.arange(j0, j0 + kb.size(2), device=q.device)
                s = s.masked_fill(j[None, :] > i[:, None] + offset, -math.inf)
            m_new = torch.maximum(m, s.amax(-1))
            safe = m_new.nan_to_num(neginf=0.0)
            p = torch.exp(s - safe[..., None])
            a = torch.exp(m - safe)
            l = a * l + p.sum(-1)
            acc = a[..., None] * acc + torch.einsum("bhij,bhjd->bhid", p, vb)
            m = m_new
        outs.append(acc / l.clamp(min=1e-38 if q.dtype != torch.float16 else 1e-7)[..., None])
    return torch.cat(outs, dim=2)
