"""Exercise encoder-layer: attention + feed-forward, residuals, LayerNorm."""

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
        Tk = key.shape[1]
        hd = D // self.h
        q = self.W_q(query).reshape(B, Tq, self.h, hd).permute(0, 2, 1, 3)
        k = self.W_k(key).reshape(B, Tk, self.h, hd).permute(0, 2, 1, 3)
        v = self.W_v(value).reshape(B, Tk, self.h, hd).permute(0, 2, 1, 3)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        if mask is not None:
            att = att.masked_fill(~mask[:, None], torch.finfo(att.dtype).min)
        att = torch.softmax(att, dim=-1)
        y = (att @ v).permute(0, 2, 1, 3).reshape(B, Tq, D)
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

    def ffn(self, x):
        h = self.ff1(x)
        h = nn.functional.dropout(h, p=0.0, training=self.training)  # MISTAKE
        return self.ff2(h)

    def forward(self, x, mask=None):
        if self.norm_first:
            a = self.norm1(x)
            x = x + self.self_attn(a, a, a, mask)[0]
            x = x + self.ffn(self.norm2(x))
        else:
            x = self.norm1(x + self.self_attn(x, x, x, mask)[0])
            x = self.norm2(x + self.ffn(x))
        return x
