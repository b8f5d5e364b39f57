"""Hidden keys get a score of 0 (masked_fill(~mask, 0)) instead of -inf, so they keep some probability."""
import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    scale = q.size(-1) ** -0.5
    att = (q @ k.transpose(-1, -2)) * scale
    if mask is not None:
        att = att.masked_fill(~mask, 0.0)
    att = torch.softmax(att, dim=-1)
    out = att @ v
    return out, att
