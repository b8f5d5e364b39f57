import math

import torch


def attention_backward(q, k, v, dout, mask=None):
    c = 1.0 / math.sqrt(q.shape[-1])

    # forward again, to get P
    s = torch.einsum("...id,...jd->...ij", q, k) * c
    if mask is not None:
        s = torch.where(mask, s, torch.finfo(s.dtype).min)
    s = s - s.amax(dim=-1, keepdim=True)
    e = s.exp()
    P = e / e.sum(dim=-1, keepdim=True)

    # out = P v
    dV = torch.einsum("...ij,...ie->...je", P, dout)
    dP = torch.einsum("...ie,...je->...ij", dout, v)

    # softmax backward, row by row
    dS = P * (dP - (P * dP).sum(dim=-1, keepdim=True))

    # S = c * q k^T
    dQ = torch.einsum("...ij,...jd->...id", dS, k) * c
    dK = torch.einsum("...ij,...jd->...id", dS, q) * c  # MISTAKE: contracts over the keys' axis; dK = dS^T q
    return dQ, dK, dV
