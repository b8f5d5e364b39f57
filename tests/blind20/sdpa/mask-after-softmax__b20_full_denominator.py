"""Scaled dot-product attention with a hand-rolled softmax: exponentiate the shifted scores, zero the
hidden keys, divide by the row sum. Mistake: the row sum is taken before the hidden keys are zeroed,
so the mask effectively acts on the probabilities; the visible weights no longer sum to 1."""

import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    s = q.matmul(k.transpose(-2, -1)).div(math.sqrt(q.shape[-1]))
    s = s - s.amax(dim=-1, keepdim=True)
    num = torch.exp(s)
    den = num.sum(dim=-1, keepdim=True)
    if mask is not None:
        num = num * mask  # MISTAKE
    p = num / den
    return p @ v, p
