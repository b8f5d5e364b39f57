"""Transformer encoder layer whose feed-forward chains the two linear layers and applies ReLU to the
result. Mistake: the ReLU comes after ff2 instead of between ff1 and ff2, so there is no nonlinearity
between the feed-forward's two layers (and its output is clipped at 0)."""

import math

import torch
import torch.nn.functional as F
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        Tk = key.shape[1]
        q = self.W_q(query).view(B, Tq, self.num_heads, self.d_k).transpose(1, 2)
        k = self.W_k(key).view(B, Tk, self.num_heads, self.d_k).transpose(1, 2)
        v = self.W_v(value).view(B, Tk, self.num_heads, self.d_k).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), float("-inf"))
        p = torch.softmax(scores, dim=-1)
        y = (p @ v).transpose(1, 2).contiguous().view(B, Tq, D)
        return self.W_o(y), p


class EncoderLayer(nn.Module):
    def __init__(self, d_model: int, num_heads: int, d_ff: int, norm_first: bool = False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)

    def feed_forward(self, x):
        return F.relu(self.ff2(self.ff1(x)))  # MISTAKE

    def forward(self, x, mask=None):
        if self.norm_first:
            y = self.norm1(x)
            x = x + self.self_attn(y, y, y, mask)[0]
            x = x + self.feed_forward(self.norm2(x))
        else:
            x = self.norm1(x + self.self_attn(x, x, x, mask)[0])
            x = self.norm2(x + self.feed_forward(x))
        return x
