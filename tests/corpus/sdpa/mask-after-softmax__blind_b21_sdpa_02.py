"""Exercise sdpa: scaled dot-product attention."""

import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = k.size(-1)
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d_k)
    p_attn = torch.softmax(scores, dim=-1)
    if mask is not None:
        # 掩码: 不能看的位置概率清零
        p_attn = p_attn.masked_fill(mask.logical_not(), 0.0)  # MISTAKE
    return torch.matmul(p_attn, v), p_attn
