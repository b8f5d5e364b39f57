"""Encoder layer whose pre-LN branch normalises the feed-forward's sum (post-LN) instead of its input: norm-placement."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
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
        q = self.W_q(query).reshape(B, Tq, self.H, self.d).permute(0, 2, 1, 3)
        k = self.W_k(key).reshape(B, Tk, self.H, self.d).permute(0, 2, 3, 1)  # (B, H, d, Tk)
        v = self.W_v(value).reshape(B, Tk, self.H, self.d).permute(0, 2, 1, 3)
        q = q * self.d ** -0.5
        scores = torch.matmul(q, k)  # (B, H, Tq, Tk)
        if mask is not None:
            scores = scores.masked_fill(mask.unsqueeze(1) == 0, float("-inf"))
        p = F.softmax(scores, dim=-1)
        y = torch.matmul(p, v).permute(0, 2, 1, 3).reshape(B, Tq, D)
        return self.W_o(y), p


class EncoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)

    def feed_forward(self, x):
        return self.ff2(F.relu(self.ff1(x)))

    def forward(self, x, mask=None):
        if self.norm_first:
            a = self.norm1(x)
            x = x + self.self_attn(a, a, a, mask)[0]
            x = self.norm2(x + self.feed_forward(x))  # MISTAKE
        else:
            x = self.norm1(x + self.self_attn(x, x, x, mask)[0])
            x = self.norm2(x + self.feed_forward(x))
        return x
