"""Hand-written stable softmax: exp(x - rowmax) / rowsum, masked scores set to finfo.min."""

import math

import torch


def _softmax(x, dim=-1):
    x = x - x.amax(dim=dim, keepdim=True)
    e = torch.exp(x)
    return e / e.sum(dim=dim, keepdim=True)


def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = q.shape[-1]
    s = torch.matmul(q, k.transpose(-2, -1))
    s = s / math.sqrt(d_k)
    if mask is not None:
        very_negative = torch.finfo(s.dtype).min
        s = s.masked_fill(~mask, very_negative)
    p = _softmax(s, dim=-1)
    return torch.matmul(p, v), p
