"""Transformer encoder layer that runs its two sub-layers in a loop over (norm, function) pairs.
Mistake: in the post-LN branch the loop writes x = norm(f(x)), so each sub-layer's output replaces
its input instead of being added to it; the pre-LN branch is right."""

import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.h = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        d = D // self.h

        def heads(t):
            return t.reshape(B, t.shape[1], self.h, d).permute(0, 2, 1, 3)

        q, k, v = heads(self.W_q(query)), heads(self.W_k(key)), heads(self.W_v(value))
        att = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d)
        if mask is not None:
            att = att.masked_fill(mask[:, None] == 0, float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = torch.matmul(att, v).permute(0, 2, 1, 3).reshape(B, Tq, D)
        return self.W_o(y), att


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
        steps = (
            (self.norm1, lambda t: self.self_attn(t, t, t, mask)[0]),
            (self.norm2, lambda t: self.ff2(torch.relu(self.ff1(t)))),
        )
        for norm, fn in steps:
            if self.norm_first:
                x = x + fn(norm(x))
            else:
                x = norm(fn(x))  # MISTAKE
        return x
