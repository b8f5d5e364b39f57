import math

import torch


def attention_backward(q, k, v, dout, mask=None):
    scale = 1.0 / math.sqrt(q.size(-1))
    s = q @ k.transpose(-2, -1) * scale
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    p = torch.softmax(s, dim=-1)

    dv = p.transpose(-2, -1) @ dout
    dp = dout @ v.transpose(-2, -1)
    ds = p * (dp - (p * dp).sum(-1, keepdim=True))
    dq = scale * (ds @ k)
    # dk = (q^T dS)^T, written as a product of transposes
    dk = scale * (q.transpose(-2, -1) @ ds.transpose(-2, -1)).transpose(-2, -1)  # MISTAKE
    return dq, dk, dv
