"""Exercise encoder-layer: attention + feed-forward, residuals, LayerNorm."""

import math

import torch
import torch.nn.functional as F
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
        Tk = key.shape[1]
        d = D // self.H
        q = self.W_q(query).unflatten(-1, (self.H, d))  # (B, Tq, H, d)
        k = self.W_k(key).unflatten(-1, (self.H, d))
        v = self.W_v(value).unflatten(-1, (self.H, d))
        s = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(d)
        if mask is not None:
            s = s.masked_fill(~mask.unsqueeze(1), torch.finfo(s.dtype).min)
        w = torch.softmax(s, dim=-1)
        y = torch.einsum("bhqk,bkhd->bqhd", w, v).flatten(-2)  # (B, Tq, D)
        return self.W_o(y), w


class EncoderLayer(nn.Module):
    def __init__(self, d_model: int, num_heads: int, d_ff: int, norm_first: bool = False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)

    def _sublayer(self, x, fn, norm):
        if self.norm_first:
            return x + fn(norm(x))
        return norm(x + fn(x))

    def forward(self, x, mask=None):
        x = self._sublayer(x, lambda h: self.self_attn(h, h, h, mask)[0], self.norm1)
        x = self._sublayer(x, lambda h: self.ff2(F.relu(self.ff1(h))), self.norm2)
        return x
