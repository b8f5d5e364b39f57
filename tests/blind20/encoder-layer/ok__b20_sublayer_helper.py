"""Transformer encoder layer built from a generic residual helper (pre-LN: x + f(norm(x)); post-LN:
norm(x + f(x))) around an einsum-based multi-head attention whose heads come from unflatten and whose
mask gets its head axis with unsqueeze(-3). Correct (unusual style: einsum MHA, one helper for both
sub-layers and both norm placements, ReLU via clamp)."""

import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.num_heads = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        H = self.num_heads
        q = self.W_q(query).unflatten(-1, (H, -1))
        k = self.W_k(key).unflatten(-1, (H, -1))
        v = self.W_v(value).unflatten(-1, (H, -1))
        s = torch.einsum("bihd,bjhd->bhij", q, k) * q.shape[-1] ** -0.5
        if mask is not None:
            s = s.masked_fill(~mask.unsqueeze(-3), float("-inf"))
        a = s.softmax(-1)
        o = torch.einsum("bhij,bjhd->bihd", a, v).flatten(2)
        return self.W_o(o), a


class EncoderLayer(nn.Module):
    def __init__(self, d_model: int, num_heads: int, d_ff: int, norm_first: bool = False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)

    def _residual(self, x, fn, norm):
        return x + fn(norm(x)) if self.norm_first else norm(x + fn(x))

    def forward(self, x, mask=None):
        x = self._residual(x, lambda h: self.self_attn(h, h, h, mask)[0], self.norm1)
        x = self._residual(x, lambda h: self.ff2(self.ff1(h).clamp(min=0)), self.norm2)
        return x
