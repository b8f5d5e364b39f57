"""Accumulates in float32 for half-precision inputs and masks with finfo.min (then zeroes the masked weights)."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    dtype = q.dtype
    acc_dtype = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    q, k, v = q.to(acc_dtype), k.to(acc_dtype), v.to(acc_dtype)
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    lowest = torch.finfo(acc_dtype).min
    running_max = torch.full((B, H, Tq, 1), lowest, dtype=acc_dtype, device=q.device)
    running_sum = torch.zeros(B, H, Tq, 1, dtype=acc_dtype, device=q.device)
    acc = torch.zeros(B, H, Tq, d, dtype=acc_dtype, device=q.device)
    for s0 in range(0, Tk, block_size):
        s1 = min(s0 + block_size, Tk)
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k[:, :, s0:s1]) / math.sqrt(d)
        if causal:
            ok = torch.arange(s0, s1, device=q.device)[None, :] <= torch.arange(Tq, device=q.device)[:, None] + Tk - Tq
            scores = scores.masked_fill(~ok, lowest)
        new_max = torch.maximum(running_max, scores.amax(-1, keepdim=True))
        weights = torch.exp(scores - new_max)
        if causal:
            weights = weights * ok
        rescale = torch.exp(running_max - new_max)
        running_sum = running_sum * rescale + weights.sum(-1, keepdim=True)
        acc = acc * rescale + torch.einsum("bhqk,bhkd->bhqd", weights, v[:, :, s0:s1])
        running_max = new_max
    out = acc / running_sum.clamp_min(torch.finfo(acc_dtype).tiny)
    return out.to(dtype)
