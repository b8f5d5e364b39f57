"""Multi-head attention that merges the heads with transpose(1, 2).view(B, Tq, D). Mistake: after the
transpose the tensor is not contiguous, and .view cannot merge the (H, d) axes of a non-contiguous
tensor, so the merge raises a RuntimeError whenever H > 1 and Tq > 1 (it runs, and is right, only
for a single head or a single query). .reshape or .contiguous().view is needed."""

import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.num_heads = num_heads
        self.d_head = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        H, d = self.num_heads, self.d_head
        q = self.W_q(query).view(B, -1, H, d).transpose(1, 2)
        k = self.W_k(key).view(B, -1, H, d).transpose(1, 2)
        v = self.W_v(value).view(B, -1, H, d).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d)
        if mask is not None:
            scores = scores.masked_fill(~mask[:, None, :, :], float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        ctx = (weights @ v).transpose(1, 2).view(B, Tq, D)  # MISTAKE
        return self.W_o(ctx), weights
