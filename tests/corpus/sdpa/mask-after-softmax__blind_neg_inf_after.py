"""Takes the softmax first, then fills the hidden keys of the probabilities with -inf."""
import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    sc = q @ k.transpose(-2, -1)
    sc = sc / math.sqrt(q.shape[-1])
    probs = torch.softmax(sc, dim=-1)
    if mask is not None:
        probs = probs.masked_fill(mask.logical_not(), float("-inf"))
    return probs @ v, probs
