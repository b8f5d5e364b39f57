"""Flash attention that keeps the running max, a running sum and the accumulator, rescaling both
correctly. Mistake: the final division uses the sum of the last block's exponentials (row_sum, a
loop variable) instead of the running sum l, so the output is normalised by a stale, partial sum;
right only when the keys fit in one block."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    orig = q.dtype
    work = torch.float32 if orig in (torch.float16, torch.bfloat16) else orig
    q, k, v = q.to(work), k.to(work), v.to(work)
    m = q.new_full((B, H, Tq, 1), float("-inf"))
    l = q.new_zeros((B, H, Tq, 1))
    o = q.new_zeros((B, H, Tq, v.shape[-1]))
    qpos = torch.arange(Tq, device=q.device).unsqueeze(1) + Tk - Tq
    for s0 in range(0, Tk, block_size):
        s1 = min(s0 + block_size, Tk)
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k[:, :, s0:s1]) / math.sqrt(d)
        if causal:
            kpos = torch.arange(s0, s1, device=q.device).unsqueeze(0)
            scores = scores.masked_fill(kpos > qpos, float("-inf"))
        m_next = torch.maximum(m, scores.amax(-1, keepdim=True))
        p = torch.exp(scores - m_next)
        row_sum = p.sum(-1, keepdim=True)
        corr = torch.exp(m - m_next)
        l = l * corr + row_sum
        o = o * corr + torch.einsum("bhqk,bhkd->bhqd", p, v[:, :, s0:s1])
        m = m_next
    out = o / row_sum  # MISTAKE
    return out.to(orig)
