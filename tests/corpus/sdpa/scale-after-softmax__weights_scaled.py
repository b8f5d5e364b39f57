"""Softmax of the raw scores, then the probabilities are multiplied by 1/sqrt(d) instead of scaling the scores."""
import math

import torch
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    logits = q @ k.mT
    if mask is not None:
        logits = logits.masked_fill(~mask, -float("inf"))
    weights = F.softmax(logits, dim=-1) / math.sqrt(k.shape[-1])
    return weights @ v, weights
