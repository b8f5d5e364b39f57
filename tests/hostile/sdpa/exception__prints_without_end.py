"""Prints a megabyte per loop, forever: the output cap stops it before the disk fills."""
import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    while True:
        print("x" * 1_000_000)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
