"""Carries the log-sum-exp of each row instead of (max, sum), merging blocks with torch.logaddexp."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    *_, Tq, d = q.shape
    Tk = k.shape[-2]
    lse = torch.full(q.shape[:-1], -math.inf, dtype=q.dtype, device=q.device)
    out = torch.zeros_like(q)
    q_pos = torch.arange(Tq, device=q.device) + (Tk - Tq)
    for j in range(0, Tk, block_size):
        s = q @ k[..., j:j + block_size, :].transpose(-1, -2) / math.sqrt(d)
        if causal:
            k_pos = torch.arange(j, j + s.shape[-1], device=q.device)
            s = s.masked_fill(k_pos > q_pos[:, None], -math.inf)
        blk = torch.logsumexp(s, dim=-1)
        new = torch.logaddexp(lse, blk)
        new_safe = new.masked_fill(torch.isinf(new), 0.0)
        p = torch.exp(s - new_safe[..., None])
        out = out * torch.exp(lse - new_safe)[..., None] + p @ v[..., j:j + block_size, :]
        lse = new
    return out
