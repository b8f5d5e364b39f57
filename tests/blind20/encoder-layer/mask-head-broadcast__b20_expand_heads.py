"""Transformer encoder layer whose multi-head attention makes "one mask per head" with
mask.expand(H, -1, -1). Mistake: that expands the batch axis to H instead of adding a head axis: it
raises when B != H (and B > 1), and when B == H the (H, Tq, Tk) mask broadcasts against
(B, H, Tq, Tk) with its batch axis lined up with the heads, silently giving head h sequence h's mask."""

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
        Tk = key.size(1)
        H, d = self.num_heads, self.d_head
        q = self.W_q(query).view(B, Tq, H, d).transpose(1, 2)
        k = self.W_k(key).view(B, Tk, H, d).transpose(1, 2)
        v = self.W_v(value).view(B, Tk, H, d).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d)
        if mask is not None:
            per_head = mask.expand(H, -1, -1)  # MISTAKE
            scores = scores.masked_fill(~per_head, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        y = torch.matmul(weights, v).transpose(1, 2).reshape(B, Tq, D)
        return self.W_o(y), weights


class EncoderLayer(nn.Module):
    def __init__(self, d_model: int, num_heads: int, d_ff: int, norm_first: bool = False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)

    def forward(self, x, mask=None):
        if self.norm_first:
            n = self.norm1(x)
            x = x + self.self_attn(n, n, n, mask)[0]
            x = x + self.ff2(torch.relu(self.ff1(self.norm2(x))))
        else:
            x = self.norm1(x + self.self_attn(x, x, x, mask)[0])
            x = self.norm2(x + self.ff2(torch.relu(self.ff1(x))))
        return x
