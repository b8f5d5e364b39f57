import math

import torch


def softmax(x, dim):
    x = x - x.amax(dim=dim, keepdim=True)
    e = torch.exp(x)
    return e / e.sum(dim=dim, keepdim=True)


def attention_backward(q, k, v, dout, mask=None):
    d = q.shape[-1]
    S = q @ k.transpose(-2, -1) / math.sqrt(d)
    if mask is not None:
        S = S.masked_fill(~mask, float("-inf"))
    P = softmax(S, dim=-2)  # MISTAKE

    dV = P.transpose(-2, -1) @ dout
    dP = dout @ v.transpose(-2, -1)
    # explicit softmax Jacobian per row: J = diag(p) - p p^T   (fine for small Tk)
    J = torch.diag_embed(P) - P.unsqueeze(-1) * P.unsqueeze(-2)
    dS = torch.einsum("...ij,...ijk->...ik", dP, J)
    dQ = dS @ k / math.sqrt(d)
    dK = dS.transpose(-2, -1) @ q / math.sqrt(d)
    return dQ, dK, dV
