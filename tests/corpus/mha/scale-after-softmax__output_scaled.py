"""Softmax of the unscaled scores; the 1/sqrt(d) is applied to the attention output instead."""
import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        q = self.W_q(query).view(B, Tq, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.W_k(key).view(B, -1, self.num_heads, self.head_dim).transpose(1, 2)
        v = self.W_v(value).view(B, -1, self.num_heads, self.head_dim).transpose(1, 2)
        scores = q @ k.transpose(-2, -1)
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), float("-inf"))
        attn = torch.softmax(scores, dim=-1)
        y = (attn @ v) / math.sqrt(self.head_dim)
        y = y.transpose(1, 2).contiguous().view(B, Tq, D)
        return self.W_o(y), attn
