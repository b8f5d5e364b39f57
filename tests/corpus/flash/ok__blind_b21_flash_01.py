"""Exercise flash: tiled attention, query tiles outside, key tiles inside."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    out_dtype = q.dtype
    acc_dtype = torch.promote_types(q.dtype, torch.float32)
    qs = q.to(acc_dtype) * (1.0 / math.sqrt(d))
    ks, vs = k.to(acc_dtype), v.to(acc_dtype)
    offset = Tk - Tq  # bottom-right: query i sits at position i + offset
    outs = []
    for q0 in range(0, Tq, block_size):
        q1 = min(q0 + block_size, Tq)
        qb = qs[:, :, q0:q1]
        n = q1 - q0
        row_max = torch.full((B, H, n, 1), float("-inf"), dtype=acc_dtype, device=q.device)
        row_sum = torch.zeros((B, H, n, 1), dtype=acc_dtype, device=q.device)
        o = torch.zeros((B, H, n, d), dtype=acc_dtype, device=q.device)
        qpos = torch.arange(q0, q1, device=q.device).unsqueeze(1) + offset
        k_stop = min(Tk, q1 + offset) if causal else Tk  # later key tiles are all in the future
        for k0 in range(0, max(k_stop, 0), block_size):
            k1 = min(k0 + block_size, Tk)
            s = qb @ ks[:, :, k0:k1].transpose(-1, -2)
            if causal:
                kpos = torch.arange(k0, k1, device=q.device).unsqueeze(0)
                s = s.masked_fill(kpos > qpos, float("-inf"))
            new_max = torch.maximum(row_max, s.amax(dim=-1, keepdim=True))
            safe = torch.where(torch.isinf(new_max), torch.zeros_like(new_max), new_max)
            p = torch.exp(s - safe)
            corr = torch.exp(row_max - safe)
            row_sum = corr * row_sum + p.sum(dim=-1, keepdim=True)
            o = corr * o + p @ vs[:, :, k0:k1]
            row_max = new_max
        outs.append(o / torch.where(row_sum == 0, torch.ones_like(row_sum), row_sum))
    return torch.cat(outs, dim=2).to(out_dtype)
