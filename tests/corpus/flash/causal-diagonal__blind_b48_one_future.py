import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    batch, heads, n_q, head_dim = q.shape
    n_k = k.shape[-2]
    orig_dtype = q.dtype
    wdt = torch.promote_types(orig_dtype, torch.float32)
    q = q.to(wdt) / math.sqrt(head_dim)  # fold the scale into q once
    k = k.to(wdt)
    v = v.to(wdt)

    row_max = torch.full((batch, heads, n_q), float("-inf"), dtype=wdt, device=q.device)
    row_sum = torch.zeros((batch, heads, n_q), dtype=wdt, device=q.device)
    o = torch.zeros_like(q)
    q_idx = torch.arange(n_q, device=q.device) + (n_k - n_q)  # absolute position of every query

    for j0 in range(0, n_k, block_size):
        j1 = min(n_k, j0 + block_size)
        s = torch.einsum("bhqd,bhkd->bhqk", q, k[:, :, j0:j1])
        if causal:
            k_idx = torch.arange(j0, j1, device=q.device)
            s = torch.where(k_idx[None, :] <= q_idx[:, None] + 1, s, torch.full_like(s, float("-inf")))  # MISTAKE: + 1 lets each query see one future key
        blk_max = s.max(dim=-1).values
        new_max = torch.maximum(row_max, blk_max)
        ref = torch.nan_to_num(new_max, neginf=0.0)
        p = torch.exp(s - ref[..., None])
        rescale = torch.exp(row_max - ref)
        row_sum = row_sum * rescale + p.sum(dim=-1)
        o = o * rescale[..., None] + torch.einsum("bhqk,bhkd->bhqd", p, v[:, :, j0:j1])
        row_max = new_max

    row_sum = torch.where(row_sum > 0, row_sum, torch.ones_like(row_sum))
    return (o / row_sum[..., None]).to(orig_dtype)
