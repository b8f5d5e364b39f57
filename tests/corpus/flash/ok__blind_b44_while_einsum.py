import math

import torch


def _block_scores(q, kb, scale):
    return torch.einsum("bhid,bhjd->bhij", q, kb) * scale


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    orig = q.dtype
    if orig in (torch.float16, torch.bfloat16):
        q, k, v = q.float(), k.float(), v.float()
    scale = d ** -0.5
    row_max = q.new_full((B, H, Tq, 1), -float("inf"))
    row_sum = q.new_zeros((B, H, Tq, 1))
    o = q.new_zeros((B, H, Tq, v.shape[-1]))
    q_abs = torch.arange(Tq, device=q.device).view(Tq, 1) + (Tk - Tq)
    j0 = 0
    while j0 < Tk:
        j1 = min(j0 + block_size, Tk)
        s = _block_scores(q, k[:, :, j0:j1], scale)
        if causal:
            k_abs = torch.arange(j0, j1, device=q.device).view(1, -1)
            s = torch.where(k_abs <= q_abs, s, torch.full_like(s, -float("inf")))
        new_max = torch.maximum(row_max, s.amax(dim=-1, keepdim=True))
        safe = torch.where(torch.isinf(new_max), torch.zeros_like(new_max), new_max)
        e = torch.exp(s - safe)
        corr = torch.exp(row_max - safe)
        row_sum = corr * row_sum + e.sum(dim=-1, keepdim=True)
        o = corr * o + torch.einsum("bhij,bhjd->bhid", e, v[:, :, j0:j1])
        row_max = new_max
        j0 = j1
    o = o / torch.where(row_sum == 0, torch.ones_like(row_sum), row_sum)
    return o.to(orig)
