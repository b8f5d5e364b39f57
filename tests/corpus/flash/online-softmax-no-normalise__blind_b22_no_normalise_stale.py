"""flash: keeps a normalised output up to date inside the loop."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H, Tq, d = q.size()
    Tk = k.size(2)
    qs = q / math.sqrt(d)
    row_max = q.new_full((B, H, Tq, 1), float("-inf"))
    row_sum = q.new_zeros(B, H, Tq, 1)
    acc = q.new_zeros(B, H, Tq, d)
    out = q.new_zeros(B, H, Tq, d)
    q_pos = torch.arange(Tq, device=q.device).unsqueeze(-1) + Tk - Tq

    for blk_start in range(0, Tk, block_size):
        blk_end = min(Tk, blk_start + block_size)
        s = torch.einsum("bhid,bhjd->bhij", qs, k[:, :, blk_start:blk_end])
        if causal:
            k_pos = torch.arange(blk_start, blk_end, device=q.device).unsqueeze(0)
            s = s.masked_fill(k_pos > q_pos, float("-inf"))
        new_max = torch.maximum(row_max, s.amax(dim=-1, keepdim=True))
        shift = new_max.nan_to_num(neginf=0.0)
        p = (s - shift).exp()
        rescale = (row_max - shift).exp()
        acc = acc * rescale + p @ v[:, :, blk_start:blk_end]
        out = acc / row_sum  # MISTAKE
        row_sum = row_sum * rescale + p.sum(dim=-1, keepdim=True)
        row_max = new_max
    return out
