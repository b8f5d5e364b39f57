import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    Tq, d = q.shape[-2], q.shape[-1]
    Tk = k.shape[-2]
    scale = 1 / math.sqrt(d)
    running_max = q.new_full(q.shape[:-1] + (1,), float("-inf"))
    denom = q.new_zeros(q.shape[:-1] + (1,))
    numer = q.new_zeros(q.shape[:-1] + (v.shape[-1],))
    query_at = torch.arange(Tq, device=q.device).unsqueeze(1) + (Tk - Tq)
    start = 0
    for k_blk, v_blk in zip(k.split(block_size, dim=-2), v.split(block_size, dim=-2)):
        n = k_blk.shape[-2]
        logits = q @ k_blk.transpose(-2, -1) * scale
        if causal:
            key_at = torch.arange(start, start + n, device=q.device).unsqueeze(0)
            logits = torch.where(key_at <= query_at, logits, torch.tensor(float("-inf"), dtype=logits.dtype, device=q.device))
        start += n
        blk_max = logits.amax(dim=-1, keepdim=True)
        new_max = torch.maximum(running_max, blk_max)
        ref = torch.where(new_max == float("-inf"), torch.zeros_like(new_max), new_max)
        weights = (logits - ref).exp()
        rescale = (running_max - ref).exp()
        denom = denom * rescale + weights.sum(dim=-1, keepdim=True)
        numer = numer * rescale + weights @ v_blk
        running_max = new_max
    out = numer  # MISTAKE
    return out.to(q.dtype)
