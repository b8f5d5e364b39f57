"""Flash attention tiled over both query blocks and key blocks, carrying a running log-sum-exp per row
instead of a (max, sum) pair: each key block's logsumexp is merged with logaddexp and the normalised
output is rescaled by exp(lse_old - lse_new). Key blocks entirely in a query block's causal future are
skipped. Correct (unusual style: log-domain online softmax, 2-D tiling, always-normalised accumulator)."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    out_dtype = q.dtype
    wd = torch.promote_types(q.dtype, torch.float32)
    q, k, v = q.to(wd) * (1.0 / math.sqrt(d)), k.to(wd), v.to(wd)
    offset = Tk - Tq
    outs = []
    for qs in range(0, Tq, block_size):
        qe = min(qs + block_size, Tq)
        qb = q[:, :, qs:qe]
        o = torch.zeros(B, H, qe - qs, v.shape[-1], dtype=wd, device=q.device)
        lse = torch.full((B, H, qe - qs, 1), float("-inf"), dtype=wd, device=q.device)
        qi = torch.arange(qs, qe, device=q.device)[:, None] + offset
        for ks in range(0, Tk, block_size):
            if causal and ks > qe - 1 + offset:
                break
            ke = min(ks + block_size, Tk)
            s = qb @ k[:, :, ks:ke].transpose(-1, -2)
            if causal:
                s = s.masked_fill(torch.arange(ks, ke, device=q.device)[None, :] > qi, float("-inf"))
            new_lse = torch.logaddexp(lse, torch.logsumexp(s, dim=-1, keepdim=True))
            safe = new_lse.masked_fill(torch.isinf(new_lse), 0.0)
            o = o * torch.exp(lse - safe) + torch.exp(s - safe) @ v[:, :, ks:ke]
            lse = new_lse
        outs.append(o)
    return torch.cat(outs, dim=2).to(out_dtype)
