"""flash: carries a normalised output and the running log-sum-exp (torch.logsumexp per block)."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    orig = q.dtype
    ct = torch.promote_types(orig, torch.float32)
    q = q.to(ct) * (1.0 / math.sqrt(d))
    k, v = k.to(ct), v.to(ct)
    o = q.new_zeros(B, H, Tq, v.shape[-1])
    lse = q.new_full((B, H, Tq, 1), float("-inf"))
    qpos = torch.arange(Tq, device=q.device).view(Tq, 1) + (Tk - Tq)
    neg_inf = torch.tensor(float("-inf"), dtype=ct, device=q.device)

    for j in range(0, Tk, block_size):
        n = min(block_size, Tk - j)
        kb, vb = k.narrow(2, j, n), v.narrow(2, j, n)
        s = torch.einsum("bhid,bhjd->bhij", q, kb)
        if causal:
            kpos = torch.arange(j, j + n, device=q.device).view(1, n)
            s = torch.where(kpos <= qpos, s, neg_inf)
        new_lse = torch.logaddexp(lse, torch.logsumexp(s, dim=-1, keepdim=True))
        ref = torch.where(torch.isfinite(new_lse), new_lse, torch.zeros_like(new_lse))
        o = o * torch.exp(lse - ref) + torch.exp(s - ref) @ vb
        lse = new_lse
    return o.to(orig)
