import math

import torch


def attention_backward(q, k, v, dout, mask=None):
    sm_scale = q.shape[-1] ** -0.5
    s = torch.einsum("...qd,...kd->...qk", q, k) * sm_scale
    if mask is not None:
        s = s.masked_fill(mask.logical_not(), float("-inf"))
    s_max = s.amax(dim=-1, keepdim=True)
    e = torch.exp(s - s_max)
    P = e / e.sum(dim=-1, keepdim=True)

    dV = torch.einsum("...qk,...qe->...ke", P, dout)
    dP = torch.einsum("...qe,...ke->...qk", dout, v)
    Di = torch.einsum("...qk,...qk->...q", P, dP).unsqueeze(-1)
    dS = P * (dP - Di) * sm_scale
    dQ = torch.einsum("...qk,...kd->...qd", dS, k)
    dK = torch.einsum("...qk,...kd->...qd", dS, q)  # MISTAKE: contracts dS with q as if it were k's operand (dS q instead of dS^T q)
    return dQ, dK, dV
