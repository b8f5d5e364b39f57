"""Correct: einsum scores with an ellipsis, torch.where against -inf, a hand-rolled stable softmax."""
import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.einsum("...qd,...kd->...qk", q, k) * (1.0 / math.sqrt(q.size(-1)))
    if mask is not None:
        scores = torch.where(mask, scores, torch.tensor(float("-inf"), dtype=scores.dtype, device=scores.device))
    scores = scores - scores.amax(dim=-1, keepdim=True)
    e = scores.exp()
    attn = e / e.sum(dim=-1, keepdim=True)
    return torch.einsum("...qk,...kd->...qd", attn, v), attn
