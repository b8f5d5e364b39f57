import math

import torch


def _softmax_jacobian(p):
    # d p_i / d s_j = p_i (delta_ij - p_j), one (Tk, Tk) matrix per query row
    return torch.diag_embed(p) - p.unsqueeze(-1) * p.unsqueeze(-2)


def attention_backward(q, k, v, dout, mask=None):
    scale = math.sqrt(q.shape[-1])
    logits = q.matmul(k.mT) / scale
    if mask is not None:
        logits = logits.masked_fill(mask.logical_not(), -math.inf)
    p = logits.softmax(dim=-1)

    dv = p.mT.matmul(dout)
    dp = dout.matmul(v.mT)
    jac = _softmax_jacobian(p)
    dlogits = (jac @ dp.unsqueeze(-1)).squeeze(-1)
    dq = dlogits.matmul(k) / scale
    dk = dlogits.mT.matmul(q) / scale
    return dq, dk, dv
