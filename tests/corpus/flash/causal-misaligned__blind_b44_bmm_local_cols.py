import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H, Tq, d = q.shape
    Tk = k.size(2)
    dv = v.size(-1)
    qf = q.reshape(B * H, Tq, d)
    kf = k.reshape(B * H, Tk, d)
    vf = v.reshape(B * H, Tk, dv)
    m = torch.full((B * H, Tq, 1), float("-inf"), dtype=q.dtype, device=q.device)
    l = torch.zeros((B * H, Tq, 1), dtype=q.dtype, device=q.device)
    acc = torch.zeros((B * H, Tq, dv), dtype=q.dtype, device=q.device)
    limit = torch.arange(Tq, device=q.device)[:, None] + Tk - Tq
    for lo in range(0, Tk, block_size):
        hi = min(Tk, lo + block_size)
        s = torch.bmm(qf, kf[:, lo:hi].transpose(1, 2)) / math.sqrt(d)
        if causal:
            kidx = torch.arange(hi - lo, device=q.device)[None, :]  # MISTAKE
            s = s.masked_fill(kidx > limit, float("-inf"))
        m_next = torch.maximum(m, s.amax(-1, keepdim=True))
        base = torch.where(torch.isfinite(m_next), m_next, torch.zeros_like(m_next))
        p = torch.exp(s - base)
        fix = torch.exp(m - base)
        l = fix * l + p.sum(-1, keepdim=True)
        acc = fix * acc + torch.bmm(p, vf[:, lo:hi])
        m = m_next
    out = acc / l.clamp_min(torch.finfo(l.dtype).tiny)
    return out.reshape(B, H, Tq, dv)
