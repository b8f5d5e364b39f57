"""Heads kept as (H, B, T, d), but split with view(B, H, T, d).transpose(0, 1): contiguous blocks of (T, D), not features."""
import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.H = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def to_heads(self, x):
        B, T, D = x.shape
        return x.view(B, self.H, T, D // self.H).transpose(0, 1)           # (H, B, T, d)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        q, k, v = self.to_heads(self.W_q(query)), self.to_heads(self.W_k(key)), self.to_heads(self.W_v(value))
        s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])               # (H, B, Tq, Tk)
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        p = s.softmax(-1)
        ctx = (p @ v).permute(1, 2, 0, 3).reshape(B, Tq, D)                # (B, Tq, H*d)
        return self.W_o(ctx), p.transpose(0, 1)
