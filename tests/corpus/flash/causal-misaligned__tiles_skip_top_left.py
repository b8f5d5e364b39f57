"""Query and key tiles, skipping key tiles past the diagonal, with the diagonal drawn from the top-left corner."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    result = torch.empty_like(q)
    for i0 in range(0, Tq, block_size):
        i1 = min(i0 + block_size, Tq)
        qb = q[:, :, i0:i1] * d ** -0.5
        m = torch.full((B, H, i1 - i0, 1), -math.inf, dtype=q.dtype, device=q.device)
        l = torch.zeros_like(m)
        acc = torch.zeros_like(qb)
        stop = min(Tk, i1) if causal else Tk  # keys past the last query of the tile are all future
        for j0 in range(0, stop, block_size):
            j1 = min(j0 + block_size, stop)
            s = qb @ k[:, :, j0:j1].transpose(-1, -2)
            if causal:
                future = torch.arange(j0, j1, device=q.device)[None, :] > torch.arange(i0, i1, device=q.device)[:, None]
                s = s.masked_fill(future, -math.inf)
            m_new = torch.maximum(m, s.amax(-1, keepdim=True))
            z = m_new.nan_to_num(neginf=0.0)
            p = (s - z).exp()
            a = (m - z).exp()
            l = a * l + p.sum(-1, keepdim=True)
            acc = a * acc + p @ v[:, :, j0:j1]
            m = m_new
        result[:, :, i0:i1] = acc / l
    return result
