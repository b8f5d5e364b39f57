"""Cached GQA self-attention with a RoPE helper that takes an `offset` argument (default 0) for the
first token's position. Mistake: forward calls the helper without passing T_past, so every call
rotates its new tokens as positions 0..T_new-1 whatever the cache holds; the causal mask itself uses
the right offset. Prefill alone is right; every later chunk or decode step is rotated wrongly."""

import math

import torch
from torch import nn


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0):
        super().__init__()
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.d_head = d_model // num_heads
        self.rope_base = rope_base
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d_head, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d_head, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def rope(self, t, offset=0):
        T, d = t.shape[-2], t.shape[-1]
        pos = torch.arange(offset, offset + T, device=t.device, dtype=torch.float64)
        inv = self.rope_base ** (-torch.arange(0, d, 2, device=t.device, dtype=torch.float64) / d)
        ang = torch.outer(pos, inv)
        c, s = ang.cos().to(t.dtype), ang.sin().to(t.dtype)
        a, b = t[..., : d // 2], t[..., d // 2 :]
        return torch.cat([a * c - b * s, b * c + a * s], dim=-1)

    def forward(self, x, cache=None):
        B, T, D = x.shape
        H, Hkv, d = self.num_heads, self.num_kv_heads, self.d_head
        T_past = cache[0].shape[2] if cache is not None else 0
        q = self.W_q(x).view(B, T, H, d).transpose(1, 2)
        k = self.W_k(x).view(B, T, Hkv, d).transpose(1, 2)
        v = self.W_v(x).view(B, T, Hkv, d).transpose(1, 2)
        q, k = self.rope(q), self.rope(k)  # MISTAKE
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        k_all = k.repeat_interleave(H // Hkv, dim=1)
        v_all = v.repeat_interleave(H // Hkv, dim=1)
        scores = q @ k_all.transpose(-2, -1) / math.sqrt(d)
        mask = torch.ones(T, T_past + T, dtype=torch.bool, device=x.device).tril(diagonal=T_past)
        scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        y = (weights @ v_all).transpose(1, 2).reshape(B, T, D)
        return self.W_o(y), (k, v)
