import math

import torch


def attention_backward(q, k, v, dout, mask=None):
    d = q.shape[-1]
    s = q @ k.transpose(-1, -2) / math.sqrt(d)
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    p = s.softmax(dim=-1)

    dv = p.transpose(-1, -2) @ dout
    dp = dout @ v.transpose(-1, -2)
    ds = p * (dp - (p * dp).sum(-1, keepdim=True)) / math.sqrt(d)
    dq = ds @ k
    dk = ds @ q  # MISTAKE
    return dq, dk, dv
