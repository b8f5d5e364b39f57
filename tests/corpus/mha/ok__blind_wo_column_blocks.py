"""Correct: W_o applied as per-head column blocks of its weight, summed over heads, bias added once."""
import math

import torch
import torch.nn.functional as F
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def _heads(self, t):
        B, T, _ = t.shape
        return t.view(B, T, self.num_heads, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, query, key, value, mask=None):
        q, k, v = self._heads(self.W_q(query)), self._heads(self.W_k(key)), self._heads(self.W_v(value))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), float("-inf"))
        weights = scores.softmax(dim=-1)
        ctx = weights @ v                                               # (B, H, Tq, d)
        W = self.W_o.weight.view(-1, self.num_heads, self.head_dim)     # (D_out, H, d)
        out = torch.einsum("bhtd,ohd->bto", ctx, W)
        if self.W_o.bias is not None:
            out = out + self.W_o.bias
        return out, weights
