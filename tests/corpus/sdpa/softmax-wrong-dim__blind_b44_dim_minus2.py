import math

import torch
import torch.nn.functional as F


def _scores(q, k):
    return q @ k.transpose(-1, -2) * (1.0 / math.sqrt(q.shape[-1]))


def _apply_mask(att, mask):
    if mask is None:
        return att
    return att.masked_fill(~mask.bool(), torch.finfo(att.dtype).min)


def scaled_dot_product_attention(q, k, v, mask=None):
    att = _apply_mask(_scores(q, k), mask)
    att = F.softmax(att, dim=-2)  # MISTAKE
    y = att @ v
    return y, att
