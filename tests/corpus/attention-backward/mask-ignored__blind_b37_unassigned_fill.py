import math

import torch


def attention_backward(q, k, v, dout, mask=None):
    scale = math.sqrt(q.shape[-1])
    s = q @ k.mT / scale
    if mask is not None:
        s.masked_fill(~mask, float("-inf"))  # MISTAKE
    p = torch.softmax(s, dim=-1)
    o = p @ v

    dv = p.mT @ dout
    dp = dout @ v.mT
    ds = p * (dp - (dout * o).sum(dim=-1, keepdim=True))
    return ds @ k / scale, ds.mT @ q / scale, dv
