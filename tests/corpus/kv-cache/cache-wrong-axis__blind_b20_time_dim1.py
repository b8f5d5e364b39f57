"""Cached GQA self-attention that appends the new keys and values to the cache along dim=1, the
candidate's "time axis" from x's (B, T, D) layout. Mistake: the cache is (B, Hkv, T, d), so dim=1 is
the head axis: the concatenation raises when T_past != T_new and, when they are equal, stacks the new
tokens as extra heads instead of extra time steps."""

import math

import torch
from torch import nn


def apply_rope(x, positions, base=10000.0):
    d = x.size(-1)
    inv = 1.0 / base ** (torch.arange(0, d, 2, device=x.device, dtype=torch.float64) / d)
    ang = positions.to(torch.float64)[:, None] * inv
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


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

    def forward(self, x, cache=None):
        B, T, D = x.shape
        H, Hkv, d = self.num_heads, self.num_kv_heads, self.d_head
        T_past = 0 if cache is None else cache[0].size(2)
        pos = torch.arange(T_past, T_past + T, device=x.device)
        q = apply_rope(self.W_q(x).view(B, T, H, d).transpose(1, 2), pos, self.rope_base)
        k = apply_rope(self.W_k(x).view(B, T, Hkv, d).transpose(1, 2), pos, self.rope_base)
        v = self.W_v(x).view(B, T, Hkv, d).transpose(1, 2)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=1)  # MISTAKE
            v = torch.cat([cache[1], v], dim=1)
        k_r = k.repeat_interleave(H // Hkv, dim=1)
        v_r = v.repeat_interleave(H // Hkv, dim=1)
        Tk = k_r.size(2)
        scores = q @ k_r.transpose(-2, -1) / math.sqrt(d)
        mask = torch.ones(T, Tk, dtype=torch.bool, device=x.device).tril(diagonal=Tk - T)
        scores = scores.masked_fill(~mask, float("-inf"))
        w = torch.softmax(scores, dim=-1)
        y = (w @ v_r).transpose(1, 2).reshape(B, T, D)
        return self.W_o(y), (k, v)
