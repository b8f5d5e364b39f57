import math

import torch


def attention_backward(q, k, v, dout, mask=None):
    inv_sqrt_d = 1.0 / math.sqrt(q.shape[-1])
    logits = q @ k.transpose(-2, -1) * inv_sqrt_d
    if mask is not None:
        logits = logits.masked_fill(~mask, 0.0)  # MISTAKE
    attn = torch.softmax(logits, dim=-1)
    d_value = attn.transpose(-2, -1) @ dout
    d_attn = dout @ v.transpose(-2, -1)
    row_dot = (d_attn * attn).sum(dim=-1, keepdim=True)
    d_logits = attn * (d_attn - row_dot)
    d_query = d_logits @ k * inv_sqrt_d
    d_key = d_logits.transpose(-2, -1) @ q * inv_sqrt_d
    return d_query, d_key, d_value
