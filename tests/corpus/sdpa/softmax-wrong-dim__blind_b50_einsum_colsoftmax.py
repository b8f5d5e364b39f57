import math

import torch


def _stable_softmax(x, dim):
    x = x - x.amax(dim=dim, keepdim=True)
    e = torch.exp(x)
    return e / e.sum(dim=dim, keepdim=True)


def scaled_dot_product_attention(q, k, v, mask=None):
    dk = q.shape[-1]
    s = torch.einsum("...qd,...kd->...qk", q, k) / math.sqrt(dk)
    if mask is not None:
        s = torch.where(mask, s, torch.finfo(s.dtype).min)
    p = _stable_softmax(s, dim=-2)  # MISTAKE: normalises each key's column over the queries
    return torch.einsum("...qk,...kv->...qv", p, v), p
