"""KV heads are tiled with .repeat (0,1,0,1) instead of interleaved, and the causal mask is a plain top-left tril(ones(T, Tk)) that ignores the cache offset."""

import math

import torch
from torch import nn


def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    half = d // 2
    fdt = torch.promote_types(x.dtype, torch.float32)
    freqs = base ** (-torch.arange(half, device=x.device, dtype=fdt) * 2.0 / d)
    ang = positions.to(fdt)[:, None] * freqs[None, :]
    c, s = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    a, b = x[..., :half], x[..., half:]
    return torch.cat([a * c - b * s, b * c + a * s], dim=-1)


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0):
        super().__init__()
        self.h = num_heads
        self.hkv = num_kv_heads
        self.d = d_model // num_heads
        self.rope_base = rope_base
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def _split(self, t, n):
        B, T, _ = t.shape
        return t.reshape(B, T, n, self.d).permute(0, 2, 1, 3)

    def forward(self, x, cache=None):
        B, T, D = x.shape
        start = 0 if cache is None else cache[0].shape[-2]
        pos = torch.arange(start, start + T, device=x.device)

        q = apply_rope(self._split(self.W_q(x), self.h), pos, self.rope_base)
        k = apply_rope(self._split(self.W_k(x), self.hkv), pos, self.rope_base)
        v = self._split(self.W_v(x), self.hkv)
        if cache is not None:
            k = torch.cat((cache[0], k), dim=-2)
            v = torch.cat((cache[1], v), dim=-2)
        S = k.shape[-2]

        groups = self.h // self.hkv
        k_full = k.repeat(1, groups, 1, 1)
        v_full = v.repeat(1, groups, 1, 1)

        att = (q @ k_full.transpose(-2, -1)) / math.sqrt(self.d)
        causal = torch.tril(torch.ones(T, S, dtype=torch.bool, device=x.device))
        att = att.masked_fill(causal.logical_not(), float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = att @ v_full
        y = y.permute(0, 2, 1, 3).reshape(B, T, D)
        return self.W_o(y), (k, v)
