import math

import torch


def attention_backward(q, k, v, dout, mask=None):
    head_dim = v.shape[-1]  # MISTAKE
    inv = 1.0 / math.sqrt(head_dim)
    s = torch.matmul(q, k.transpose(-2, -1)) * inv
    if mask is not None:
        s = torch.where(mask, s, torch.full_like(s, float("-inf")))
    p = torch.softmax(s, dim=-1)

    dv = torch.matmul(p.transpose(-2, -1), dout)
    dp = torch.matmul(dout, v.transpose(-2, -1))
    ds = p * (dp - torch.sum(p * dp, dim=-1, keepdim=True))
    dq = torch.matmul(ds, k) * inv
    dk = torch.matmul(ds.transpose(-2, -1), q) * inv
    return dq, dk, dv
