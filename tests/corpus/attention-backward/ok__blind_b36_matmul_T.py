import math

import torch
import torch.nn.functional as F


def attention_backward(q, k, v, dout, mask=None):
    """Hand-derived gradients of out = softmax(q k^T / sqrt(d)) v."""
    scale = 1 / math.sqrt(q.shape[-1])

    # forward (recomputed)
    scores = q @ k.transpose(-2, -1) * scale
    if mask is not None:
        scores = scores.masked_fill(mask == 0, torch.finfo(scores.dtype).min)
    attn = F.softmax(scores, dim=-1)

    # out = attn @ v
    dv = attn.transpose(-2, -1) @ dout
    dattn = dout @ v.transpose(-2, -1)

    # softmax backward: dS = P * (dP - sum_j dP_j P_j)
    dscores = attn * (dattn - (dattn * attn).sum(-1, keepdim=True))
    dscores = dscores * scale

    dq = dscores @ k
    dk = dscores.transpose(-2, -1) @ q
    return dq, dk, dv
