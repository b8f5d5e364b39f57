import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    # q: (..., Tq, d)   k: (..., Tk, d)   v: (..., Tk, dv)
    scores = torch.matmul(q, k.transpose(-2, -1))
    scores = scores / math.sqrt(q.size(-1))
    if mask is not None:
        scores.masked_fill(mask == 0, float("-inf"))  # MISTAKE
    p_attn = scores.softmax(dim=-1)
    return torch.matmul(p_attn, v), p_attn
