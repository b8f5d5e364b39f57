import math

import torch


def attention_backward(q, k, v, dout, mask=None):
    scale = 1.0 / math.sqrt(q.shape[-1])
    S = torch.matmul(q, k.transpose(-2, -1)) * scale
    if mask is not None:
        S = S.masked_fill(~mask, float("-inf"))
    P = torch.softmax(S, dim=-1)

    dV = torch.matmul(P, dout)  # MISTAKE
    dP = torch.matmul(dout, v.transpose(-2, -1))
    dS = P * (dP - (dP * P).sum(dim=-1, keepdim=True))
    dQ = torch.matmul(dS, k) * scale
    dK = torch.matmul(dS.transpose(-2, -1), q) * scale
    return dQ, dK, dV
