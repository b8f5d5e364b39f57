"""FlashAttention-1 style: the output is kept normalised after every block (O = diag(l)^-1 ...)."""

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    Tq, d = q.size(-2), q.size(-1)
    Tk = k.size(-2)
    q = q * d ** -0.5
    neg = torch.finfo(q.dtype).min
    out = torch.zeros_like(q)
    row_max = torch.full_like(q[..., :1], neg)
    row_sum = torch.zeros_like(q[..., :1])
    rows = torch.arange(Tq, device=q.device).view(-1, 1)
    for start in range(0, Tk, block_size):
        stop = min(Tk, start + block_size)
        s = q @ k[..., start:stop, :].mT
        if causal:
            cols = torch.arange(start, stop, device=q.device).view(1, -1)
            s = torch.where(cols <= rows + (Tk - Tq), s, neg)
        blk_max = s.amax(-1, keepdim=True)
        p = (s - blk_max).exp()
        if causal:
            p = torch.where(cols <= rows + (Tk - Tq), p, 0.0)
        blk_sum = p.sum(-1, keepdim=True)
        new_max = torch.maximum(row_max, blk_max)
        new_sum = (row_max - new_max).exp() * row_sum + (blk_max - new_max).exp() * blk_sum
        out = (row_sum * (row_max - new_max).exp() * out
               + (blk_max - new_max).exp() * (p @ v[..., start:stop, :])) / new_sum.clamp_min(1e-30)
        row_max, row_sum = new_max, new_sum
    return out
