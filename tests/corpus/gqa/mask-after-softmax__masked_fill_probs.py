"""Zeroes the hidden keys' probabilities with masked_fill after the softmax."""

import torch
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, bias: bool = False):
        super().__init__()
        self.H, self.Hkv, self.d = num_heads, num_kv_heads, d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        q = self.W_q(x).unflatten(-1, (self.H, self.d)).transpose(1, 2)
        k = self.W_k(x).unflatten(-1, (self.Hkv, self.d)).transpose(1, 2)
        v = self.W_v(x).unflatten(-1, (self.Hkv, self.d)).transpose(1, 2)
        k = k.repeat_interleave(self.H // self.Hkv, 1)
        v = v.repeat_interleave(self.H // self.Hkv, 1)
        att = (q @ k.transpose(-1, -2) / self.d ** 0.5).softmax(-1)
        if mask is not None:
            att = att.masked_fill(~mask.unsqueeze(1), 0.0)
        return self.W_o((att @ v).transpose(1, 2).flatten(2)), att
