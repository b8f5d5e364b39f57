"""Guards the exponentials, but divides by a running sum that is still 0 for a query that saw no key."""

import torch


def flash_attention(q, k, v, causal=False, block_size=64):
    Tq, d = q.shape[-2:]
    Tk = k.shape[-2]
    lowest = torch.finfo(q.dtype).min
    mx = torch.full_like(q[..., :1], lowest)
    total = torch.zeros_like(q[..., :1])
    out = torch.zeros_like(q)
    for j in range(0, Tk, block_size):
        s = torch.einsum("...id,...jd->...ij", q, k[..., j:j + block_size, :]) * d ** -0.5
        ok = None
        if causal:
            rows = torch.arange(Tq, device=q.device)[:, None] + Tk - Tq
            ok = torch.arange(j, j + s.shape[-1], device=q.device)[None, :] <= rows
            s = s.masked_fill(~ok, lowest)
        new = torch.maximum(mx, s.amax(-1, keepdim=True))
        e = torch.exp(s - new)
        if ok is not None:
            e = e * ok
        f = torch.exp(mx - new)
        total = total * f + e.sum(-1, keepdim=True)
        out = out * f + torch.einsum("...ij,...jd->...id", e, v[..., j:j + block_size, :])
        mx = new
    return out / total
