"""Multi-head attention whose masking line calls the out-of-place masked_fill and drops its result.
Mistake: Tensor.masked_fill returns a new tensor (masked_fill_ is the in-place one), so the scores are
never masked and the mask changes nothing."""

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
        B, Tq, _ = query.shape
        H, d = self.num_heads, self.d_head

        def split(t):
            return t.view(B, -1, H, d).transpose(1, 2)

        q, k, v = split(self.W_q(query)), split(self.W_k(key)), split(self.W_v(value))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d)
        if mask is not None:
            scores.masked_fill(mask.unsqueeze(1) == 0, float("-inf"))  # MISTAKE
        weights = torch.softmax(scores, dim=-1)
        out = torch.matmul(weights, v).transpose(1, 2).contiguous().view(B, Tq, H * d)
        return self.W_o(out), weights
