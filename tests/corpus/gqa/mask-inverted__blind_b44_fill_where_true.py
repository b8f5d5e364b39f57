import math

import torch
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, bias: bool = False):
        super().__init__()
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def _split(self, t, n):
        B, T, _ = t.shape
        return t.reshape(B, T, n, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        q = self._split(self.W_q(x), self.num_heads)
        k = self._split(self.W_k(x), self.num_kv_heads)
        v = self._split(self.W_v(x), self.num_kv_heads)
        rep = self.num_heads // self.num_kv_heads
        k = k[:, :, None].expand(B, self.num_kv_heads, rep, T, self.head_dim).reshape(B, self.num_heads, T, self.head_dim)
        v = v[:, :, None].expand(B, self.num_kv_heads, rep, T, self.head_dim).reshape(B, self.num_heads, T, self.head_dim)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        if mask is not None:
            mask = mask.unsqueeze(1)
            scores = scores.masked_fill(mask, torch.finfo(scores.dtype).min)  # MISTAKE
        weights = torch.softmax(scores, dim=-1)
        out = torch.matmul(weights, v).permute(0, 2, 1, 3).reshape(B, T, D)
        return self.W_o(out), weights
