"""Calls its own module-level scaled_dot_product_attention helper (same name as the builtin, but hand-written)."""

import math

import torch
from torch import nn


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.num_heads = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def _split(self, x):
        B, T, D = x.shape
        return x.view(B, T, self.num_heads, D // self.num_heads).transpose(1, 2)

    def forward(self, query, key, value, mask=None):
        q, k, v = self._split(self.W_q(query)), self._split(self.W_k(key)), self._split(self.W_v(value))
        if mask is not None:
            mask = mask.unsqueeze(1)
        out, weights = scaled_dot_product_attention(q, k, v, mask)
        B, H, Tq, d = out.shape
        out = out.transpose(1, 2).reshape(B, Tq, H * d)
        return self.W_o(out), weights
