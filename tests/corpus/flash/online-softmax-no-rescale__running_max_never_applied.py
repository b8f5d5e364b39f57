"""Tracks the running max and shifts each block by it, but never rescales the old sum and output."""

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    d = q.size(-1)
    Tq, Tk = q.size(-2), k.size(-2)
    running_max = None
    num = torch.zeros_like(q)
    den = torch.zeros_like(q[..., :1])
    for start in range(0, Tk, block_size):
        s = torch.einsum("bhid,bhjd->bhij", q, k[:, :, start:start + block_size]) * d ** -0.5
        if causal:
            j = torch.arange(start, start + s.size(-1), device=q.device)
            i = torch.arange(Tq, device=q.device) + Tk - Tq
            s = s.masked_fill(j[None, :] > i[:, None], float("-inf"))
        block_max = s.amax(-1, keepdim=True)
        running_max = block_max if running_max is None else torch.maximum(running_max, block_max)
        shift = running_max.masked_fill(running_max == float("-inf"), 0.0)
        e = torch.exp(s - shift)
        num = num + torch.einsum("bhij,bhjd->bhid", e, v[:, :, start:start + block_size])
        den = den + e.sum(-1, keepdim=True)
    return num / den.masked_fill(den == 0, 1.0)
