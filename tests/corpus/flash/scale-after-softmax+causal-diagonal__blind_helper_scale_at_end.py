"""1/sqrt(d) is applied to the normalised output instead of the scores, and the causal test lets each query see one future key (j <= i + offset + 1)."""

import math

import torch


def _visible(q_pos, k_pos, offset):
    # query at q_pos may look at key at k_pos
    return k_pos[None, :] <= q_pos[:, None] + offset + 1


def _block_update(state, s, vb):
    m, l, o = state
    m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
    base = torch.where(torch.isfinite(m_new), m_new, torch.zeros_like(m_new))
    p = torch.exp(s - base)
    r = torch.exp(m - base)
    return m_new, l * r + p.sum(dim=-1, keepdim=True), o * r + p @ vb


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H, Tq, d = q.shape
    Tk = k.size(2)
    dtype = q.dtype
    wd = torch.promote_types(dtype, torch.float32)
    q, k, v = q.to(wd), k.to(wd), v.to(wd)

    state = (
        torch.full((B, H, Tq, 1), -math.inf, dtype=wd, device=q.device),
        torch.zeros(B, H, Tq, 1, dtype=wd, device=q.device),
        torch.zeros(B, H, Tq, d, dtype=wd, device=q.device),
    )
    q_pos = torch.arange(Tq, device=q.device)
    for c0 in range(0, Tk, block_size):
        c1 = min(c0 + block_size, Tk)
        s = q @ k[:, :, c0:c1].transpose(-2, -1)
        if causal:
            ok = _visible(q_pos, torch.arange(c0, c1, device=q.device), Tk - Tq)
            s = s.masked_fill(~ok, -math.inf)
        state = _block_update(state, s, v[:, :, c0:c1])

    _, l, o = state
    l = torch.where(l > 0, l, torch.ones_like(l))
    out = (o / l) / math.sqrt(d)
    return out.to(dtype)
