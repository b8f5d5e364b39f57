"""Multi-head attention with a small helper that turns a projection into heads with
reshape(B, H, -1, d), so it works for any sequence length. Mistake: reshaping (B, T, D) straight to
(B, H, T, d) cuts the contiguous (T, D) block into H pieces of T*d numbers instead of giving head h
the features [h*d, (h+1)*d) of every token (a view to (B, T, H, d) and a transpose are needed).
The merge is the correct transpose + reshape."""

import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.n_heads = num_heads
        self.d_k = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def _heads(self, t):
        return t.reshape(t.size(0), self.n_heads, -1, self.d_k)  # MISTAKE

    def forward(self, query, key, value, mask=None):
        B, Tq, D = query.shape
        q = self._heads(self.W_q(query))
        k = self._heads(self.W_k(key))
        v = self._heads(self.W_v(value))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        ctx = (weights @ v).transpose(1, 2).reshape(B, Tq, D)
        return self.W_o(ctx), weights
