"""Leaves num_kv_heads out of __init__ (plain multi-head attention habits)."""

import math

import torch
from torch import nn


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, rope_base=10000.0):
        super().__init__()
        self.h, self.d = num_heads, d_model // num_heads
        self.base = rope_base
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, d_model, bias=False)
        self.W_v = nn.Linear(d_model, d_model, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, D = x.shape
        past = 0 if cache is None else cache[0].shape[2]
        q = self.W_q(x).view(B, T, self.h, self.d).transpose(1, 2)
        k = self.W_k(x).view(B, T, self.h, self.d).transpose(1, 2)
        v = self.W_v(x).view(B, T, self.h, self.d).transpose(1, 2)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        s = q @ k.transpose(-2, -1) / math.sqrt(self.d)
        allowed = torch.ones(T, past + T, dtype=torch.bool, device=x.device).tril(diagonal=past)
        y = s.masked_fill(~allowed, float("-inf")).softmax(-1) @ v
        return self.W_o(y.transpose(1, 2).reshape(B, T, D)), (k, v)
