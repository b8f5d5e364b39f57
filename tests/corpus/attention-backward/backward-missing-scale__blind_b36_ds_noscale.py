import math

import torch


def _softmax(x):
    x = x - x.max(dim=-1, keepdim=True).values
    e = x.exp()
    return e / e.sum(dim=-1, keepdim=True)


def attention_backward(q, k, v, dout, mask=None):
    scale = 1.0 / math.sqrt(q.size(-1))
    S = (q @ k.transpose(-2, -1)) * scale
    if mask is not None:
        S = S.masked_fill(~mask, float("-inf"))
    P = _softmax(S)

    dV = P.transpose(-2, -1) @ dout
    dP = dout @ v.transpose(-2, -1)
    # gradient w.r.t. the scaled scores; the 1/sqrt(d) is folded in here
    dS = P * (dP - (P * dP).sum(dim=-1, keepdim=True))  # MISTAKE
    dQ = dS @ k
    dK = dS.transpose(-2, -1) @ q
    return dQ, dK, dV
