import torch


def attention_backward(q, k, v, dout, mask=None, softmax_scale=None):
    if softmax_scale is None:
        softmax_scale = 1.0  # MISTAKE
    S = torch.matmul(q, k.transpose(-2, -1)) * softmax_scale
    if mask is not None:
        S = S.masked_fill(~mask, float("-inf"))
    P = torch.softmax(S, dim=-1)
    O = torch.matmul(P, v)

    dV = torch.matmul(P.transpose(-2, -1), dout)
    dP = torch.matmul(dout, v.transpose(-2, -1))
    D = (dout * O).sum(-1, keepdim=True)
    dS = P * (dP - D) * softmax_scale
    dQ = torch.matmul(dS, k)
    dK = torch.matmul(dS.transpose(-2, -1), q)
    return dQ, dK, dV
