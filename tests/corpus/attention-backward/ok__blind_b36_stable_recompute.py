import math

import torch


def _stable_softmax(x):
    # subtract the row max so exp never overflows
    x_max = torch.max(x, dim=-1, keepdim=True).values
    e = torch.exp(x - x_max)
    return e / torch.sum(e, dim=-1, keepdim=True)


def attention_backward(q, k, v, dout, mask=None):
    d = q.shape[-1]
    # 1) recompute the forward
    S = q.matmul(k.transpose(-2, -1)) / math.sqrt(d)
    if mask is not None:
        S = S.masked_fill(~mask.bool(), float("-inf"))
    P = _stable_softmax(S)

    # 2) O = P V  ->  dV = P^T dO,  dP = dO V^T
    dV = P.transpose(-2, -1).matmul(dout)
    dP = dout.matmul(v.transpose(-2, -1))

    # 3) softmax Jacobian-vector product, row by row
    dS = P * (dP - (P * dP).sum(dim=-1, keepdim=True))

    # 4) S = Q K^T / sqrt(d)
    dQ = dS.matmul(k) / math.sqrt(d)
    dK = dS.transpose(-2, -1).matmul(q) / math.sqrt(d)
    return dQ, dK, dV
