"""reshape + transpose, masked_fill with float('-inf') and plain softmax (only an empty row gives NaN: a warning)."""

import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.n_heads = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        Tk = key.size(1)
        H = self.n_heads
        d = D // H
        q = self.W_q(query).reshape(B, Tq, H, d).transpose(1, 2)
        k = self.W_k(key).reshape(B, Tk, H, d).transpose(1, 2)
        v = self.W_v(value).reshape(B, Tk, H, d).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d))
        if mask is not None:
            att = att.masked_fill(~mask.unsqueeze(1), float("-inf"))
        att = att.softmax(dim=-1)
        y = att @ v
        y = y.transpose(1, 2).reshape(B, Tq, D)
        return self.W_o(y), att
