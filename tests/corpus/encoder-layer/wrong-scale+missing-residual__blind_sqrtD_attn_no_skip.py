"""Attention scores are divided by sqrt(d_model) instead of sqrt(head dim), and the attention sub-layer has no residual (its output replaces x)."""

import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.d_model = d_model
        self.num_heads = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        Tk = key.shape[1]
        H = self.num_heads
        d = D // H
        q = self.W_q(query).view(B, Tq, H, d).transpose(1, 2).reshape(B * H, Tq, d)
        k = self.W_k(key).view(B, Tk, H, d).transpose(1, 2).reshape(B * H, Tk, d)
        v = self.W_v(value).view(B, Tk, H, d).transpose(1, 2).reshape(B * H, Tk, d)
        s = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(self.d_model)
        s = s.view(B, H, Tq, Tk)
        if mask is not None:
            s = s.masked_fill(~mask.unsqueeze(1), float("-inf"))
        p = torch.softmax(s, dim=-1)
        o = torch.bmm(p.reshape(B * H, Tq, Tk), v).view(B, H, Tq, d)
        o = o.transpose(1, 2).reshape(B, Tq, D)
        return self.W_o(o), p


class EncoderLayer(nn.Module):
    def __init__(self, d_model: int, num_heads: int, d_ff: int, norm_first: bool = False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.act = nn.ReLU()

    def forward(self, x, mask=None):
        if self.norm_first:
            y = self.norm1(x)
            x = self.self_attn(y, y, y, mask)[0]
            x = x + self.ff2(self.act(self.ff1(self.norm2(x))))
        else:
            x = self.norm1(self.self_attn(x, x, x, mask)[0])
            x = self.norm2(x + self.ff2(self.act(self.ff1(x))))
        return x
