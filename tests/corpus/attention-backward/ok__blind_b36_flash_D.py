import math

import torch


def attention_backward(q, k, v, dout, mask=None):
    # FlashAttention-2 style: recompute P, then D_i = rowsum(dO_i * O_i)
    scale = 1.0 / math.sqrt(q.shape[-1])
    S = torch.matmul(q, k.transpose(-2, -1)) * scale
    if mask is not None:
        S = S.masked_fill(~mask, float("-inf"))
    m = S.amax(dim=-1, keepdim=True)
    P = torch.exp(S - m)
    P = P / P.sum(dim=-1, keepdim=True)
    O = torch.matmul(P, v)

    dV = torch.matmul(P.transpose(-2, -1), dout)
    dP = torch.matmul(dout, v.transpose(-2, -1))
    D = (dout * O).sum(dim=-1, keepdim=True)  # == rowsum(dP * P)
    dS = P * (dP - D)
    dQ = torch.matmul(dS, k) * scale
    dK = torch.matmul(dS.transpose(-2, -1), q) * scale
    return dQ, dK, dV
