import math

import torch


def attention_backward(q, k, v, dout, mask=None):
    # fold the 1/sqrt(d) into q once, then everything is a plain product
    q_s = q / math.sqrt(q.shape[-1])
    scores = q_s @ k.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    attn = torch.softmax(scores, dim=-1)
    out = attn @ v

    dv = attn.transpose(-2, -1) @ dout
    d_attn = dout @ v.transpose(-2, -1)
    d_scores = attn * (d_attn - (dout * out).sum(-1, keepdim=True))
    dk = d_scores.transpose(-2, -1) @ q_s
    dq = d_scores @ k  # MISTAKE
    return dq, dk, dv
