import math

import torch
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = q.shape[-1]
    logits = torch.einsum("...qd,...kd->...qk", q, k) / math.sqrt(d_k)
    if mask is not None:
        neg = torch.tensor(float("-inf"), dtype=logits.dtype, device=logits.device)
        logits = torch.where(mask, logits, neg)
    attn = F.softmax(logits, dim=-1)
    out = torch.einsum("...qk,...kv->...qv", attn, v)
    return out, attn
