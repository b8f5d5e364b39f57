"""Scores are never divided by sqrt(d), and the causal test uses `<` so each query also hides its own (diagonal) key."""

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    out_dtype = q.dtype
    cdt = torch.promote_types(out_dtype, torch.float32)
    qf, kf, vf = q.to(cdt), k.to(cdt), v.to(cdt)
    dev = q.device
    offset = Tk - Tq  # bottom-right alignment

    out = torch.zeros(B, H, Tq, d, dtype=cdt, device=dev)
    for qs in range(0, Tq, block_size):
        qe = min(qs + block_size, Tq)
        qb = qf[:, :, qs:qe]
        n = qe - qs
        row_max = torch.full((B, H, n, 1), -float("inf"), dtype=cdt, device=dev)
        row_sum = torch.zeros((B, H, n, 1), dtype=cdt, device=dev)
        o = torch.zeros((B, H, n, d), dtype=cdt, device=dev)
        qi = torch.arange(qs, qe, device=dev)[:, None]
        for ks in range(0, Tk, block_size):
            ke = min(ks + block_size, Tk)
            if causal and ks > (qe - 1) + offset:
                break  # every key from here on is in the future for this query block
            s = qb @ kf[:, :, ks:ke].transpose(-1, -2)
            if causal:
                kj = torch.arange(ks, ke, device=dev)[None, :]
                allowed = kj < qi + offset
                s = s.masked_fill(~allowed, float("-inf"))
            blk_max = s.max(dim=-1, keepdim=True).values
            new_max = torch.maximum(row_max, blk_max)
            safe = torch.where(new_max == -float("inf"), torch.zeros_like(new_max), new_max)
            p = torch.exp(s - safe)
            corr = torch.exp(row_max - safe)
            row_sum = row_sum * corr + p.sum(-1, keepdim=True)
            o = o * corr + p @ vf[:, :, ks:ke]
            row_max = new_max
        denom = torch.where(row_sum > 0, row_sum, torch.ones_like(row_sum))
        out[:, :, qs:qe] = o / denom
    return out.to(out_dtype)
