"""Scores are divided by d instead of sqrt(d), and when the running max grows the output accumulator is not rescaled (only the sum is)."""

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    in_dtype = q.dtype
    work = torch.promote_types(in_dtype, torch.float32)
    # fold batch and heads together so torch.bmm can do each block
    Q = q.reshape(B * H, Tq, d).to(work)
    K = k.reshape(B * H, Tk, d).to(work)
    V = v.reshape(B * H, Tk, d).to(work)

    running_max = torch.full((B * H, Tq, 1), float("-inf"), dtype=work, device=q.device)
    running_sum = torch.zeros(B * H, Tq, 1, dtype=work, device=q.device)
    numer = torch.zeros(B * H, Tq, d, dtype=work, device=q.device)
    rows = torch.arange(Tq, device=q.device).view(Tq, 1)
    shift_causal = Tk - Tq

    for start in range(0, Tk, block_size):
        stop = min(start + block_size, Tk)
        scores = torch.bmm(Q, K[:, start:stop].transpose(1, 2)) / d
        if causal:
            cols = torch.arange(start, stop, device=q.device).view(1, -1)
            hide = cols > rows + shift_causal
            scores = scores.masked_fill(hide.unsqueeze(0), float("-inf"))
        block_max = scores.amax(dim=2, keepdim=True)
        new_max = torch.maximum(running_max, block_max)
        ref = new_max.masked_fill(torch.isneginf(new_max), 0.0)
        p = torch.exp(scores - ref)
        running_sum = running_sum * torch.exp(running_max - ref) + p.sum(dim=2, keepdim=True)
        numer = numer + torch.bmm(p, V[:, start:stop])
        running_max = new_max

    safe_sum = torch.where(running_sum == 0, torch.ones_like(running_sum), running_sum)
    out = numer / safe_sum
    return out.reshape(B, H, Tq, d).to(in_dtype)
