"""Grouped-query attention that computes the output projection but returns the merged heads from
before it. Mistake: the tensor returned is the pre-W_o merge, so W_o is never applied to the output."""

import math

import torch
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, bias: bool = False):
        super().__init__()
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.d_head = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d_head, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d_head, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        B, T, D = x.shape
        H, Hkv, d = self.num_heads, self.num_kv_heads, self.d_head
        q = self.W_q(x).view(B, T, H, d).transpose(1, 2)
        k = self.W_k(x).view(B, T, Hkv, d).transpose(1, 2).repeat_interleave(H // Hkv, 1)
        v = self.W_v(x).view(B, T, Hkv, d).transpose(1, 2).repeat_interleave(H // Hkv, 1)
        s = q @ k.transpose(-2, -1) / math.sqrt(d)
        if mask is not None:
            s = s.masked_fill(~mask.unsqueeze(1), float("-inf"))
        w = torch.softmax(s, dim=-1)
        merged = (w @ v).transpose(1, 2).reshape(B, T, D)
        projected = self.W_o(merged)
        return merged, w  # MISTAKE
