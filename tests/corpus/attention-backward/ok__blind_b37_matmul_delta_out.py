import math

import torch


def attention_backward(q, k, v, dout, mask=None):
    scale = 1.0 / math.sqrt(q.shape[-1])
    s = (q @ k.transpose(-2, -1)) * scale
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    s = s - s.amax(dim=-1, keepdim=True)
    e = torch.exp(s)
    p = e / e.sum(dim=-1, keepdim=True)
    out = p @ v

    dv = p.transpose(-2, -1) @ dout
    dp = dout @ v.transpose(-2, -1)
    delta = (dout * out).sum(dim=-1, keepdim=True)
    ds = p * (dp - delta)
    dq = (ds @ k) * scale
    dk = (ds.transpose(-2, -1) @ q) * scale
    return dq, dk, dv
