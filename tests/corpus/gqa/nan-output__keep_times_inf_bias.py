"""Masks by arithmetic, s * keep + (1 - keep) * -inf: for every kept key that is 0 * -inf = NaN."""

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
        k = self.W_k(x).unflatten(-1, (self.Hkv, self.d)).transpose(1, 2).repeat_interleave(self.H // self.Hkv, 1)
        v = self.W_v(x).unflatten(-1, (self.Hkv, self.d)).transpose(1, 2).repeat_interleave(self.H // self.Hkv, 1)
        s = q @ k.transpose(-1, -2) / self.d ** 0.5
        if mask is not None:
            keep = mask.unsqueeze(1).to(s.dtype)
            s = s * keep + (1.0 - keep) * float("-inf")
        att = s.softmax(-1)
        return self.W_o((att @ v).transpose(1, 2).flatten(2)), att
