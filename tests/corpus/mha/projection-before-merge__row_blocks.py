"""Applies W_o per head before merging, but with the head's row block of the weight (W_o.weight[h*d:(h+1)*d, :]), then sums."""
import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.n_heads = num_heads
        self.d_head = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def split(self, x):
        B, T, _ = x.shape
        return x.view(B, T, self.n_heads, self.d_head).transpose(1, 2)

    def forward(self, query, key, value, mask=None):
        q, k, v = self.split(self.W_q(query)), self.split(self.W_k(key)), self.split(self.W_v(value))
        s = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(self.d_head)
        if mask is not None:
            s = s.masked_fill(~mask.unsqueeze(1), float("-inf"))
        p = torch.softmax(s, dim=-1)
        z = torch.einsum("bhqk,bhkd->bhqd", p, v)
        # project every head to d_model, then add the heads up
        W = self.W_o.weight.view(self.n_heads, self.d_head, -1)          # (H, d, D)
        out = torch.einsum("bhqd,hdo->bqo", z, W)
        if self.W_o.bias is not None:
            out = out + self.W_o.bias
        return out, p
