"""1/sqrt(dv) everywhere: the value width read for the head width."""

import math

import torch


def attention_backward(q, k, v, dout, mask=None):
    d = v.shape[-1]
    s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d)
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    p = torch.softmax(s, dim=-1)
    dv = torch.matmul(p.transpose(-1, -2), dout)
    dp = torch.matmul(dout, v.transpose(-1, -2))
    row = (dp * p).sum(dim=-1, keepdim=True)
    ds = p * (dp - row)
    dq = torch.matmul(ds, k) / math.sqrt(d)
    dk = torch.matmul(ds.transpose(-1, -2), q) / math.sqrt(d)
    return dq, dk, dv
