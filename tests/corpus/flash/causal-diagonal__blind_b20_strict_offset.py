"""Flash attention whose causal test is written as a relative offset: key j is visible to query i when
j - i is below the bottom-right shift Tk - Tq. Mistake: the comparison is strict (<) where it must be
<=, so every query loses its own (diagonal) key; the online softmax itself is right."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    sm_scale = 1.0 / math.sqrt(d)
    running_max = torch.full((B, H, Tq, 1), float("-inf"), dtype=q.dtype, device=q.device)
    running_sum = torch.zeros((B, H, Tq, 1), dtype=q.dtype, device=q.device)
    acc = torch.zeros((B, H, Tq, d), dtype=q.dtype, device=q.device)
    qi = torch.arange(Tq, device=q.device).view(-1, 1)
    for lo in range(0, Tk, block_size):
        hi = min(lo + block_size, Tk)
        scores = q @ k[:, :, lo:hi].transpose(2, 3) * sm_scale
        if causal:
            kj = torch.arange(lo, hi, device=q.device).view(1, -1)
            visible = (kj - qi) < (Tk - Tq)  # MISTAKE
            scores = torch.where(visible, scores, torch.full_like(scores, float("-inf")))
        new_max = torch.maximum(running_max, scores.amax(dim=-1, keepdim=True))
        new_max = torch.where(torch.isinf(new_max), torch.zeros_like(new_max), new_max)
        p = torch.exp(scores - new_max)
        alpha = torch.exp(running_max - new_max)
        running_sum = running_sum * alpha + p.sum(dim=-1, keepdim=True)
        acc = acc * alpha + p @ v[:, :, lo:hi]
        running_max = new_max
    return acc / running_sum.clamp_min(1e-30)
