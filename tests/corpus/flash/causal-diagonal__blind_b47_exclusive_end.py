import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    scale = 1.0 / math.sqrt(d)
    out_dtype = q.dtype
    acc_dtype = torch.promote_types(q.dtype, torch.float32)
    q, k, v = q.to(acc_dtype), k.to(acc_dtype), v.to(acc_dtype)

    row_max = torch.full((B, H, Tq, 1), float("-inf"), dtype=q.dtype, device=q.device)
    row_sum = torch.zeros((B, H, Tq, 1), dtype=q.dtype, device=q.device)
    acc = torch.zeros((B, H, Tq, v.shape[-1]), dtype=q.dtype, device=q.device)

    # one past the last key each query may read
    key_end = torch.arange(Tq, device=q.device)[:, None] + (Tk - Tq) + 1  # (Tq, 1)
    stop = key_end + 1  # MISTAKE: key_end is already exclusive; this lets each query read one future key

    for s0 in range(0, Tk, block_size):
        kb = k[:, :, s0:s0 + block_size]
        vb = v[:, :, s0:s0 + block_size]
        s = (q @ kb.transpose(-1, -2)) * scale
        if causal:
            cols = torch.arange(s0, s0 + kb.shape[2], device=q.device)[None, :]
            s = s.masked_fill(cols >= stop, float("-inf"))
        new_max = torch.maximum(row_max, s.amax(dim=-1, keepdim=True))
        safe = torch.where(torch.isinf(new_max), torch.zeros_like(new_max), new_max)
        p = torch.exp(s - safe)
        corr = torch.exp(row_max - safe)
        row_sum = row_sum * corr + p.sum(dim=-1, keepdim=True)
        acc = acc * corr + p @ vb
        row_max = new_max

    out = acc / torch.where(row_sum == 0, torch.ones_like(row_sum), row_sum)
    return out.to(out_dtype)
