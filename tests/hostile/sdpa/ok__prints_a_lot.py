"""Correct, but prints 5000 lines at import and a line per call, and warns on stderr."""
import sys

import math

import torch

for i in range(5000):
    print(f'debug line {i}')
print('\x1b[31mred\x1b[0m and a bell\x07', file=sys.stderr)

def scaled_dot_product_attention(q, k, v, mask=None):
    print('called with', tuple(q.shape))
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    out = weights @ v
    return out, weights
