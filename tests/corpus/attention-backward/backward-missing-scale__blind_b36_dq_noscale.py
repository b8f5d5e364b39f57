import math

import torch


def attention_backward(q, k, v, dout, mask=None):
    scale = 1 / math.sqrt(q.shape[-1])
    scores = q @ k.transpose(-2, -1) * scale
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    P = torch.softmax(scores, dim=-1)

    dV = P.transpose(-2, -1) @ dout
    dP = dout @ v.transpose(-2, -1)
    dS = P * (dP - (dP * P).sum(-1, keepdim=True))
    dQ = dS @ k  # MISTAKE
    dK = dS.transpose(-2, -1) @ q * scale
    return dQ, dK, dV
