# Correct sdpa that switches torch's global settings at import (grad mode off, default dtype float16) and never switches back.
import math

import torch

torch.set_grad_enabled(False)
torch.set_default_dtype(torch.float16)


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    return weights @ v, weights
