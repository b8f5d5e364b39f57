import math

import torch


def attention_backward(q, k, v, dout, mask=None):
    c = 1.0 / math.sqrt(q.shape[-1])
    s = torch.einsum("...id,...jd->...ij", q, k) * c
    if mask is not None:
        s = torch.where(mask, s, torch.full_like(s, float("-inf")))
    s = s - s.amax(dim=-1, keepdim=True)
    p = s.exp()
    p = p / p.sum(dim=-1, keepdim=True)
    out = torch.einsum("...ij,...je->...ie", p, v)
    dv = torch.einsum("...ij,...ie->...je", p, dout)
    dp = torch.einsum("...ie,...je->...ij", dout, v)
    delta = (dout * out).sum(dim=-1, keepdim=True)
    ds = p * (dp - delta)
    dq = torch.einsum("...ij,...jd->...id", ds, k) * c
    dk = torch.einsum("...ij,...id->...jd", ds, q) * c
    return dq, dk, dv
