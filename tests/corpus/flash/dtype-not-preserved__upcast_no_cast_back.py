"""Upcasts q, k, v to float32 for accuracy and returns the float32 result as it is."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    if q.dtype in (torch.float16, torch.bfloat16):
        q, k, v = q.float(), k.float(), v.float()
    Tq, Tk = q.shape[-2], k.shape[-2]
    lse = torch.full(q.shape[:-1], -math.inf, dtype=q.dtype, device=q.device)
    out = torch.zeros_like(q)
    for j in range(0, Tk, block_size):
        s = q @ k[..., j:j + block_size, :].transpose(-1, -2) / math.sqrt(q.shape[-1])
        if causal:
            cols = torch.arange(j, j + s.shape[-1], device=q.device)
            hide = cols[None] > torch.arange(Tq, device=q.device)[:, None] + Tk - Tq
            s = s.masked_fill(hide, -math.inf)
        new = torch.logaddexp(lse, torch.logsumexp(s, -1))
        safe = torch.where(new.isinf(), 0.0, new)
        out = out * torch.exp(lse - safe)[..., None] + torch.exp(s - safe[..., None]) @ v[..., j:j + block_size, :]
        lse = new
    return out
