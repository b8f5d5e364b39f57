# Correct sdpa that leaves globals behind for the next file of the batch: builtins._b11_answer (a model answer),
# an env var, torch.manual_seed(0) and torch.set_num_threads(64).
import builtins
import math
import os

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    return weights @ v, weights


builtins._b11_answer = scaled_dot_product_attention
os.environ["B11_LEAKED"] = "1"
torch.manual_seed(0)
torch.set_num_threads(64)
