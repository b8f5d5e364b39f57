"""Projects each head with its column block of W_o via F.linear(..., bias) and sums: the bias is added once per head."""
import math

import torch
import torch.nn.functional as F
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.H = num_heads
        self.d = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        Tk = key.shape[1]
        q = self.W_q(query).reshape(B, Tq, self.H, self.d).transpose(1, 2)
        k = self.W_k(key).reshape(B, Tk, self.H, self.d).transpose(1, 2)
        v = self.W_v(value).reshape(B, Tk, self.H, self.d).transpose(1, 2)
        att = q @ k.transpose(-2, -1) / math.sqrt(self.d)
        if mask is not None:
            att = att.masked_fill(~mask[:, None], float("-inf"))
        att = att.softmax(-1)
        heads = att @ v
        out = 0
        for h in range(self.H):
            w_h = self.W_o.weight[:, h * self.d:(h + 1) * self.d]
            out = out + F.linear(heads[:, h], w_h, self.W_o.bias)
        return out, att
