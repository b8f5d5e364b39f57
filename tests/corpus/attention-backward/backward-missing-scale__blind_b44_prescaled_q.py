import math

import torch


def _probs(scores, mask):
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    scores = scores - scores.max(dim=-1, keepdim=True).values
    e = torch.exp(scores)
    return e / e.sum(dim=-1, keepdim=True)


def attention_backward(q, k, v, dout, mask=None):
    scale = q.shape[-1] ** -0.5
    qs = q * scale
    P = _probs(qs @ k.mT, mask)
    dV = P.mT @ dout
    dP = dout @ v.mT
    dS = P * (dP - (P * dP).sum(dim=-1, keepdim=True))
    dQ = dS @ k  # MISTAKE
    dK = dS.mT @ qs
    return dQ, dK, dV
