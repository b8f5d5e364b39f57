"""Shares kv heads with torch.cat([k] * g, dim=1): heads tiled 0,1,0,1 instead of 0,0,1,1."""
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

    def forward(self, x, mask=None):
        B, T, D = x.shape
        groups = self.num_heads // self.num_kv_heads
        q = self.W_q(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.W_k(x).view(B, T, self.num_kv_heads, self.head_dim).transpose(1, 2)
        v = self.W_v(x).view(B, T, self.num_kv_heads, self.head_dim).transpose(1, 2)
        k = torch.cat([k] * groups, dim=1)
        v = torch.cat([v] * groups, dim=1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), float("-inf"))
        attn = scores.softmax(-1)
        out = (attn @ v).transpose(1, 2).reshape(B, T, D)
        return self.W_o(out), attn
