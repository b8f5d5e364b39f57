import math

import torch


def attention_backward(q, k, v, dout, mask=None):
    scale = 1 / math.sqrt(q.shape[-1])
    s = torch.einsum("...ic,...jc->...ij", q, k) * scale
    if mask is not None:
        s = s.masked_fill(~mask, -torch.inf)
    p = torch.softmax(s, dim=-1)
    o = torch.einsum("...ij,...je->...ie", p, v)

    dv = torch.einsum("...ij,...je->...ie", p, dout)  # MISTAKE
    dp = torch.einsum("...ie,...je->...ij", dout, v)
    ds = p * (dp - (dout * o).sum(-1, keepdim=True))
    dq = torch.einsum("...ij,...jc->...ic", ds, k) * scale
    dk = torch.einsum("...ij,...ic->...jc", ds, q) * scale
    return dq, dk, dv
