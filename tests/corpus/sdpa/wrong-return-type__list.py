"""Returns a list [out, weights] instead of a tuple."""

import torch
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    s = torch.einsum("...qd,...kd->...qk", q, k) * q.size(-1) ** -0.5
    if mask is not None:
        s = s.masked_fill(~mask, torch.finfo(s.dtype).min)
    w = F.softmax(s, dim=-1)
    return [torch.einsum("...qk,...kd->...qd", w, v), w]
