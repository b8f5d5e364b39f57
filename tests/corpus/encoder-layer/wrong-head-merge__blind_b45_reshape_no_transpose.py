"""Encoder layer whose attention reshapes (B, H, Tq, d) straight to (B, Tq, D) without moving the head axis back: wrong-head-merge."""
import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_head = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, Tq, _ = query.shape
        Tk = key.shape[1]
        q = self.W_q(query).view(B, Tq, self.num_heads, self.d_head).transpose(1, 2)
        k = self.W_k(key).view(B, Tk, self.num_heads, self.d_head).transpose(1, 2)
        v = self.W_v(value).view(B, Tk, self.num_heads, self.d_head).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        if mask is not None:
            neg = torch.full_like(scores, float("-inf"))
            scores = torch.where(mask[:, None, :, :], scores, neg)
        attn = scores.softmax(dim=-1)
        out = (attn @ v).reshape(B, Tq, self.d_model)  # MISTAKE
        return out @ self.W_o.weight.T + self.W_o.bias, attn


class EncoderLayer(nn.Module):
    def __init__(self, d_model: int, num_heads: int, d_ff: int, norm_first: bool = False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)

    def attention_block(self, x, mask):
        return self.self_attn(x, x, x, mask)[0]

    def ff_block(self, x):
        return self.ff2(self.ff1(x).relu())

    def forward(self, x, mask=None):
        if not self.norm_first:
            x = self.norm1(x + self.attention_block(x, mask))
            x = self.norm2(x + self.ff_block(x))
        else:
            x = x + self.attention_block(self.norm1(x), mask)
            x = x + self.ff_block(self.norm2(x))
        return x
