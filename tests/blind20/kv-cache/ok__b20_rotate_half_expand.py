"""Cached GQA self-attention with Hugging Face style RoPE (rotate_half, cos/sin duplicated with cat),
kv heads repeated with expand + reshape (consecutive query heads share a kv head), and the causal mask
built as ones(T, T_past + T).tril(T_past). Correct (unusual style: rotate_half helper, expand repeat,
scale folded into q)."""

import math

import torch
from torch import nn


def rotate_half(t):
    a, b = t.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0):
        super().__init__()
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.rope_base = rope_base
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def _cos_sin(self, start, length, device, dtype):
        hd = self.head_dim
        inv = 1.0 / self.rope_base ** (torch.arange(0, hd, 2, device=device, dtype=torch.float64) / hd)
        t = torch.arange(start, start + length, device=device, dtype=torch.float64)
        emb = torch.cat([torch.outer(t, inv)] * 2, dim=-1)
        return emb.cos().to(dtype), emb.sin().to(dtype)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H, Hkv, hd = self.num_heads, self.num_kv_heads, self.head_dim
        start = cache[0].size(2) if cache is not None else 0
        cos, sin = self._cos_sin(start, T, x.device, x.dtype)
        q = self.W_q(x).view(B, T, H, hd).transpose(1, 2)
        k = self.W_k(x).view(B, T, Hkv, hd).transpose(1, 2)
        v = self.W_v(x).view(B, T, Hkv, hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        L = k.size(2)
        kk = k.unsqueeze(2).expand(B, Hkv, H // Hkv, L, hd).reshape(B, H, L, hd)
        vv = v.unsqueeze(2).expand(B, Hkv, H // Hkv, L, hd).reshape(B, H, L, hd)
        scores = (q / math.sqrt(hd)) @ kk.transpose(-1, -2)
        keep = torch.ones(T, L, dtype=torch.bool, device=x.device).tril(start)
        scores = scores.masked_fill(~keep, float("-inf"))
        attn = torch.softmax(scores, dim=-1)
        out = (attn @ vv).transpose(1, 2).reshape(B, T, H * hd)
        return self.W_o(out), (k, v)
