"""Grouped-query attention with a helper that splits a projection into heads via view(B, T, d, n)
followed by a permute to (B, n, T, d). Mistake: viewing the features as (d, n) hands head h the
strided features h, h + n, h + 2n, ... instead of the contiguous block [h*d, (h+1)*d); the merge
afterwards is the correct transpose + reshape, so the heads come back at features they never owned."""

import math

import torch
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, bias: bool = False):
        super().__init__()
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def _split(self, t, n):
        B, T, _ = t.shape
        return t.view(B, T, self.head_dim, n).permute(0, 3, 1, 2)  # MISTAKE

    def forward(self, x, mask=None):
        B, T, D = x.shape
        q = self._split(self.W_q(x), self.num_heads)
        k = self._split(self.W_k(x), self.num_kv_heads)
        v = self._split(self.W_v(x), self.num_kv_heads)
        rep = self.num_heads // self.num_kv_heads
        k = torch.repeat_interleave(k, rep, dim=1)
        v = torch.repeat_interleave(v, rep, dim=1)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), float("-inf"))
        probs = torch.softmax(scores, dim=-1)
        out = torch.matmul(probs, v).transpose(1, 2).reshape(B, T, D)
        return self.W_o(out), probs
