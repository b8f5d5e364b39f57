"""Keys are projected from the query input (self.W_k(query)), as if it were always self-attention."""
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

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        d = D // self.H
        q = self.W_q(query).unflatten(-1, (self.H, d)).transpose(1, 2)
        k = self.W_k(query).unflatten(-1, (self.H, d)).transpose(1, 2)
        v = self.W_v(value).unflatten(-1, (self.H, d)).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) * d ** -0.5
        if mask is not None:
            scores = scores.masked_fill(~mask[:, None, :, :], float("-inf"))
        w = torch.softmax(scores, -1)
        o = (w @ v).transpose(1, 2).flatten(2)
        return self.W_o(o), w
