"""Exercise sdpa: scaled dot-product attention."""

import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    d = q.shape[-1]
    attn_score = torch.einsum("...id,...jd->...ij", q, k) * (1.0 / math.sqrt(d))
    if mask is not None:
        floor = torch.full_like(attn_score, torch.finfo(attn_score.dtype).min)
        attn_score = torch.where(mask, attn_score, floor)
    attn_score = attn_score - attn_score.amax(dim=-1, keepdim=True)
    w = attn_score.exp()
    w = w / w.sum(dim=-1, keepdim=True)
    if mask is not None:
        w = torch.where(mask, w, torch.zeros_like(w))  # hidden keys: exactly 0
    out = torch.einsum("...ij,...jd->...id", w, v)
    return out, w
