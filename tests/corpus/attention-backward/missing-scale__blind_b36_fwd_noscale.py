import math

import torch


def attention_backward(q, k, v, dout, mask=None):
    scale = 1.0 / math.sqrt(q.shape[-1])
    scores = q @ k.transpose(-2, -1)  # MISTAKE
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    attn = torch.softmax(scores, dim=-1)

    dv = attn.transpose(-2, -1) @ dout
    dattn = dout @ v.transpose(-2, -1)
    dscores = attn * (dattn - (dattn * attn).sum(-1, keepdim=True))
    dq = dscores @ k * scale
    dk = dscores.transpose(-2, -1) @ q * scale
    return dq, dk, dv
