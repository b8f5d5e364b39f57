"""Grouped-query attention that repeats the kv heads with a broadcast: a new axis is inserted, expanded
to G copies and flattened into the head axis. Mistake: the new axis goes in front of the kv-head axis
(k[:, None] -> (B, G, Hkv, T, d)), so flattening gives the tiled order 0, 1, .., Hkv-1, 0, 1, ..
(query head h reads kv head h % Hkv, like .repeat) instead of the interleaved h // G. Right only
when Hkv == 1 or Hkv == H."""

import math

import torch
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, bias: bool = False):
        super().__init__()
        self.n_head, self.n_kv = num_heads, num_kv_heads
        self.d = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def _expand(self, t):
        B, Hkv, T, d = t.shape
        G = self.n_head // Hkv
        return t[:, None].expand(B, G, Hkv, T, d).reshape(B, G * Hkv, T, d)  # MISTAKE

    def forward(self, x, mask=None):
        B, T, D = x.shape
        q = self.W_q(x).view(B, T, self.n_head, self.d).transpose(1, 2)
        k = self.W_k(x).view(B, T, self.n_kv, self.d).transpose(1, 2)
        v = self.W_v(x).view(B, T, self.n_kv, self.d).transpose(1, 2)
        k, v = self._expand(k), self._expand(v)
        att = q @ k.transpose(-2, -1) / math.sqrt(self.d)
        if mask is not None:
            att = att.masked_fill(~mask.unsqueeze(1), float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, D)
        return self.W_o(y), att
