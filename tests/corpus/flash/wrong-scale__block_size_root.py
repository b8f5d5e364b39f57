"""Scales by 1/sqrt(block_size), the width of a block, rather than 1/sqrt(d), the head dim."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    m = torch.full((B, H, Tq), -math.inf, dtype=q.dtype, device=q.device)
    l = torch.zeros((B, H, Tq), dtype=q.dtype, device=q.device)
    o = torch.zeros_like(q)
    for j in range(0, Tk, block_size):
        s = torch.einsum("bhqd,bhkd->bhqk", q, k[:, :, j:j + block_size]) / math.sqrt(block_size)
        if causal:
            kpos = torch.arange(j, j + s.shape[-1], device=q.device)
            qpos = torch.arange(Tq, device=q.device) + (Tk - Tq)
            s = s.masked_fill(kpos[None, :] > qpos[:, None], -math.inf)
        mn = torch.maximum(m, s.amax(-1))
        sh = torch.where(mn > -math.inf, mn, 0.0)
        p = torch.exp(s - sh[..., None])
        a = torch.exp(m - sh)
        l = a * l + p.sum(-1)
        o = a[..., None] * o + torch.einsum("bhqk,bhkd->bhqd", p, v[:, :, j:j + block_size])
        m = mn
    return o / torch.where(l > 0, l, 1.0)[..., None]
