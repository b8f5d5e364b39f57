"""The causal mask fills future scores with 0.0 instead of -inf."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    """q (B, H, Tq, d); k, v (B, H, Tk, d). Causal masks are bottom-right aligned. Returns (B, H, Tq, d)."""
    B, H, Tq, d = q.size()
    Tk = k.size(-2)
    scale = 1.0 / math.sqrt(d)
    dtype = q.dtype
    work = torch.promote_types(dtype, torch.float32)  # half precision inputs are accumulated in float32
    q, k, v = q.to(work), k.to(work), v.to(work)

    m = torch.full((B, H, Tq, 1), float("-inf"), dtype=work, device=q.device)  # running max of each row
    l = torch.zeros(B, H, Tq, 1, dtype=work, device=q.device)  # running sum of exp(score - m)
    acc = torch.zeros(B, H, Tq, d, dtype=work, device=q.device)  # running sum of exp(score - m) * v
    # bottom-right causal: query i may see key j iff j <= i + (Tk - Tq)
    last_key = torch.arange(Tq, device=q.device).unsqueeze(1) + (Tk - Tq)  # (Tq, 1)

    for start in range(0, Tk, block_size):
        end = min(start + block_size, Tk)
        kb, vb = k[:, :, start:end], v[:, :, start:end]  # (B, H, bs, d)
        s = q @ kb.transpose(-2, -1) * scale  # (B, H, Tq, bs): one block of scores, never all of them
        if causal:
            future = torch.arange(start, end, device=q.device) > last_key  # (Tq, bs)
            s = s.masked_fill(future, 0.0)
        m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))  # (B, H, Tq, 1)
        # a row that has seen no key yet still has max -inf: shift by 0 there, so exp gives 0 and not NaN
        shift = m_new.masked_fill(m_new == float("-inf"), 0.0)
        p = torch.exp(s - shift)  # (B, H, Tq, bs)
        alpha = torch.exp(m - shift)  # (B, H, Tq, 1): rescales what was summed under the old max
        l = l * alpha + p.sum(dim=-1, keepdim=True)
        acc = acc * alpha + p @ vb  # (B, H, Tq, d)
        m = m_new

    # a row that saw no key at all (causal with Tq > Tk) has l = 0 and acc = 0: return zeros there, as SDPA does
    out = acc / l.masked_fill(l == 0, 1.0)  # (B, H, Tq, d)
    return out.to(dtype)
