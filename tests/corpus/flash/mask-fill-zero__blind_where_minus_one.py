"""Future keys are replaced with a score of -1 via torch.where instead of -inf, so they still receive probability mass."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H, Tq, D = q.shape
    Tk = k.size(2)
    in_dtype = q.dtype
    wdt = torch.promote_types(in_dtype, torch.float32)
    Qf = q.reshape(B * H, Tq, D).to(wdt)
    Kf = k.reshape(B * H, Tk, D).to(wdt)
    Vf = v.reshape(B * H, Tk, D).to(wdt)
    inv = 1.0 / math.sqrt(D)

    m = torch.full((B * H, Tq, 1), -math.inf, dtype=wdt, device=q.device)
    l = torch.zeros((B * H, Tq, 1), dtype=wdt, device=q.device)
    acc = torch.zeros((B * H, Tq, D), dtype=wdt, device=q.device)
    diag = Tk - Tq

    for s0 in range(0, Tk, block_size):
        s1 = min(s0 + block_size, Tk)
        S = torch.bmm(Qf, Kf[:, s0:s1].transpose(1, 2)) * inv
        if causal:
            r = torch.arange(Tq, device=q.device).unsqueeze(1)
            c = torch.arange(s0, s1, device=q.device).unsqueeze(0)
            allowed = (c - r) <= diag
            S = torch.where(allowed, S, torch.full_like(S, -1.0))
        m_blk = S.max(dim=-1, keepdim=True).values
        m_next = torch.maximum(m, m_blk)
        P = torch.exp(S - m_next)
        corr = torch.exp(m - m_next)
        l = l * corr + P.sum(dim=-1, keepdim=True)
        acc = acc * corr + torch.bmm(P, Vf[:, s0:s1])
        m = m_next

    return (acc / l).reshape(B, H, Tq, D).to(in_dtype)
