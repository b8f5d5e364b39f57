import math

import torch


def attention_backward(q, k, v, dout, mask=None):
    # FlashAttention-2 backward, without tiling
    scale = 1.0 / math.sqrt(q.shape[-1])
    S = torch.matmul(q, k.transpose(-2, -1)) * scale
    if mask is not None:
        S = torch.where(mask, S, torch.tensor(float("-inf"), dtype=S.dtype, device=S.device))
    P = torch.exp(S - S.amax(dim=-1, keepdim=True))
    P = P / P.sum(dim=-1, keepdim=True)
    O = torch.matmul(P, v)

    D = torch.sum(dout * O, dim=-1, keepdim=True)
    dV = torch.matmul(P.transpose(-2, -1), dout)
    dP = torch.matmul(dout, v.transpose(-2, -1))
    dS = P * dP  # MISTAKE
    dQ = torch.matmul(dS, k) * scale
    dK = torch.matmul(dS.transpose(-2, -1), q) * scale
    return dQ, dK, dV
