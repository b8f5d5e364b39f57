# Correct sdpa whose softmax comes from a sibling package folder mylib/ (from mylib.ops import probs).
import math

import torch

from mylib.ops import probs


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = probs(scores, mask)
    return torch.matmul(weights, v), weights
