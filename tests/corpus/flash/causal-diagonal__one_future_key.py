"""Builds each block's mask with tril(diagonal=Tk - Tq + 1): every query sees one key from its future."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    Tq, d = q.shape[-2:]
    Tk = k.shape[-2]
    lse = torch.full(q.shape[:-1], -math.inf, dtype=q.dtype, device=q.device)
    out = torch.zeros_like(q)
    for j in range(0, Tk, block_size):
        n = min(block_size, Tk - j)
        s = q @ k[..., j:j + n, :].transpose(-1, -2) / math.sqrt(d)
        if causal:
            keep = torch.ones(Tq, n, dtype=torch.bool, device=q.device).tril(diagonal=Tk - Tq + 1 - j)
            s = s.masked_fill(~keep, -math.inf)
        new = torch.logaddexp(lse, torch.logsumexp(s, -1))
        safe = torch.where(torch.isinf(new), torch.zeros_like(new), new)
        out = out * torch.exp(lse - safe)[..., None] + torch.exp(s - safe[..., None]) @ v[..., j:j + n, :]
        lse = new
    return out
