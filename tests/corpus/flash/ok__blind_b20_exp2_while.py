"""Flash attention with a while loop over key blocks and base-2 exponentials (the scale is folded
together with log2(e), as the Triton kernels do): running max m, running sum l and accumulator acc are
rescaled by exp2(m_old - m_new) each block, and acc / l at the end. Correct (unusual style: exp2,
while loop, causal mask from a bottom-right diagonal offset)."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    dt = q.dtype
    acc_t = torch.float64 if dt == torch.float64 else torch.float32
    qs = q.to(acc_t) * (math.log2(math.e) / math.sqrt(d))
    kk, vv = k.to(acc_t), v.to(acc_t)
    m = q.new_full((B, H, Tq, 1), -math.inf, dtype=acc_t)
    l = q.new_zeros((B, H, Tq, 1), dtype=acc_t)
    acc = q.new_zeros((B, H, Tq, d), dtype=acc_t)
    row = torch.arange(Tq, device=q.device).view(Tq, 1)
    j0 = 0
    while j0 < Tk:
        j1 = min(j0 + block_size, Tk)
        s2 = qs @ kk[..., j0:j1, :].transpose(-2, -1)
        if causal:
            col = torch.arange(j0, j1, device=q.device).view(1, -1)
            s2 = s2.masked_fill(col - row > Tk - Tq, -math.inf)
        m_new = torch.maximum(m, s2.amax(dim=-1, keepdim=True))
        m_safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
        p = torch.exp2(s2 - m_safe)
        corr = torch.exp2(m - m_safe)
        l = corr * l + p.sum(-1, keepdim=True)
        acc = corr * acc + p @ vv[..., j0:j1, :]
        m = m_new
        j0 = j1
    return (acc / torch.where(l == 0, torch.ones_like(l), l)).to(dt)
