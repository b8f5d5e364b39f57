"""Builds the causal mask with torch.ones(T, T_past + T, dtype=torch.bool) and no device=."""

import math

import torch
from torch import nn

MAX_LEN = 128


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, rope_base=10000.0):
        super().__init__()
        self.n_head, self.n_kv = num_heads, num_kv_heads
        self.hs = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.hs, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.hs, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)
        freqs = rope_base ** (-torch.arange(0, self.hs, 2).float() / self.hs)
        angles = torch.outer(torch.arange(MAX_LEN).float(), freqs)
        self.register_buffer("cos_t", angles.cos(), persistent=False)
        self.register_buffer("sin_t", angles.sin(), persistent=False)

    def rotate(self, t, start):
        n, h = t.size(2), self.hs // 2
        cos, sin = self.cos_t[start:start + n].to(t.dtype), self.sin_t[start:start + n].to(t.dtype)
        return torch.cat([t[..., :h] * cos - t[..., h:] * sin, t[..., h:] * cos + t[..., :h] * sin], dim=-1)

    def forward(self, x, cache=None):
        B, T, C = x.size()
        start = cache[0].size(2) if cache is not None else 0
        q = self.rotate(self.W_q(x).view(B, T, self.n_head, self.hs).transpose(1, 2), start)
        k = self.rotate(self.W_k(x).view(B, T, self.n_kv, self.hs).transpose(1, 2), start)
        v = self.W_v(x).view(B, T, self.n_kv, self.hs).transpose(1, 2)
        if cache is not None:
            k = torch.cat((cache[0], k), dim=2)
            v = torch.cat((cache[1], v), dim=2)
        g = self.n_head // self.n_kv
        att = (q @ k.repeat_interleave(g, 1).transpose(-2, -1)) / math.sqrt(self.hs)
        keep = torch.ones(T, start + T, dtype=torch.bool).tril(diagonal=start)
        att = att.masked_fill(~keep, float("-inf"))
        y = torch.softmax(att, dim=-1) @ v.repeat_interleave(g, 1)
        return self.W_o(y.transpose(1, 2).reshape(B, T, C)), (k, v)
