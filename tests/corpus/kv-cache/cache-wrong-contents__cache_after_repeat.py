"""Repeats the kv heads before appending to the cache, so the cache holds H heads instead of Hkv."""

import math

import torch
from torch import nn


def rope(x, pos, base):
    d = x.shape[-1]
    inv = 1.0 / base ** (torch.arange(0, d, 2, device=x.device, dtype=torch.float32) / d)
    ang = pos[:, None].float() * inv
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, rope_base=10000.0):
        super().__init__()
        self.h, self.hkv, self.d = num_heads, num_kv_heads, d_model // num_heads
        self.base = rope_base
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, D = x.shape
        past = 0 if cache is None else cache[0].shape[2]
        q = self.W_q(x).view(B, T, self.h, self.d).transpose(1, 2)
        k = self.W_k(x).view(B, T, self.hkv, self.d).transpose(1, 2)
        v = self.W_v(x).view(B, T, self.hkv, self.d).transpose(1, 2)
        pos = torch.arange(past, past + T, device=x.device)
        q, k = rope(q, pos, self.base), rope(k, pos, self.base)
        g = self.h // self.hkv
        k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        s = q @ k.transpose(-2, -1) / math.sqrt(self.d)
        allowed = torch.ones(T, past + T, dtype=torch.bool, device=x.device).tril(diagonal=past)
        y = s.masked_fill(~allowed, float("-inf")).softmax(dim=-1) @ v
        return self.W_o(y.transpose(1, 2).reshape(B, T, D)), (k, v)
