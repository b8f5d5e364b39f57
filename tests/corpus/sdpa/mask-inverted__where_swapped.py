"""torch.where with its branches swapped: keeps the score where the mask is False, fills where it is True."""

import torch
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    d = q.shape[-1]
    attn_logits = torch.einsum("...qd,...kd->...qk", q / d**0.5, k)
    if mask is not None:
        neg = torch.finfo(attn_logits.dtype).min
        attn_logits = torch.where(mask, neg, attn_logits)
    attn = F.softmax(attn_logits, dim=-1)
    return torch.einsum("...qk,...kd->...qd", attn, v), attn
