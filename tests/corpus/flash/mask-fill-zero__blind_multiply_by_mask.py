"""The causal mask is applied by multiplying the scores by it, so future keys get score 0 (not -inf) and keep weight."""

import math

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    b, h, n, d = q.shape
    n_kv = k.shape[2]
    in_dt = q.dtype
    dt = torch.promote_types(in_dt, torch.float32)
    q, k, v = (t.to(dt) for t in (q, k, v))
    scale = 1.0 / math.sqrt(d)

    mx = torch.full((b, h, n), -math.inf, dtype=dt, device=q.device)
    den = torch.zeros((b, h, n), dtype=dt, device=q.device)
    num = torch.zeros((b, h, n, d), dtype=dt, device=q.device)
    qpos = torch.arange(n, device=q.device) + (n_kv - n)

    for lo in range(0, n_kv, block_size):
        hi = min(lo + block_size, n_kv)
        s = torch.einsum("bhid,bhjd->bhij", q, k[:, :, lo:hi]) * scale
        if causal:
            keep = (torch.arange(lo, hi, device=q.device)[None, :] <= qpos[:, None]).to(dt)
            s = s * keep
        new_mx = torch.maximum(mx, s.amax(dim=-1))
        p = torch.exp(s - new_mx.unsqueeze(-1))
        c = torch.exp(mx - new_mx)
        den = den * c + p.sum(dim=-1)
        num = num * c.unsqueeze(-1) + torch.einsum("bhij,bhjd->bhid", p, v[:, :, lo:hi])
        mx = new_mx

    return (num / den.unsqueeze(-1)).to(in_dt)
