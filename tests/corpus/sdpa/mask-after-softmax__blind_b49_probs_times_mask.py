import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    head_dim = q.size(-1)
    logits = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(head_dim)
    probs = torch.softmax(logits, dim=-1)
    if mask is not None:
        probs = probs * mask.to(probs.dtype)  # MISTAKE: mask applied to the probabilities, rows no longer sum to 1
    context = torch.matmul(probs, v)
    return context, probs
