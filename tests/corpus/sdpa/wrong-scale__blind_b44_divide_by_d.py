import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = q.size(-1)
    attn_logits = torch.matmul(q, k.transpose(-2, -1))
    attn_logits = attn_logits / d_k  # MISTAKE
    if mask is not None:
        attn_logits = attn_logits.masked_fill(mask == 0, -math.inf)
    attention = torch.softmax(attn_logits, dim=-1)
    values = torch.matmul(attention, v)
    return values, attention
