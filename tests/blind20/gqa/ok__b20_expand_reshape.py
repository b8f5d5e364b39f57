"""Grouped-query attention that repeats the kv heads with a broadcast: k[:, :, None] is expanded to
(B, Hkv, G, T, d) and flattened to (B, H, T, d), which is exactly repeat_interleave along the head
axis (consecutive query heads share a kv head). Scale is applied to q first. Correct (unusual style:
expand + reshape instead of repeat_interleave, pre-scaled q)."""

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
        H, Hkv, hd = self.num_heads, self.num_kv_heads, self.head_dim
        G = H // Hkv
        q = self.W_q(x).view(B, T, H, hd).transpose(1, 2) / math.sqrt(hd)
        k = self.W_k(x).view(B, T, Hkv, hd).transpose(1, 2)
        v = self.W_v(x).view(B, T, Hkv, hd).transpose(1, 2)
        k = k[:, :, None].expand(B, Hkv, G, T, hd).reshape(B, H, T, hd)
        v = v[:, :, None].expand(B, Hkv, G, T, hd).reshape(B, H, T, hd)
        scores = q @ k.transpose(-1, -2)
        if mask is not None:
            scores = scores.masked_fill(mask.unsqueeze(1) == False, float("-inf"))  # noqa: E712
        w = scores.softmax(dim=-1)
        y = (w @ v).transpose(1, 2).reshape(B, T, D)
        return self.W_o(y), w
