"""The causal mask sets future scores to 0 with masked_fill instead of -inf, so future keys keep weight."""

import math

import torch
from torch import nn


def apply_rope(x, positions, base=10000.0):
    d = x.size(-1)
    dtype = torch.promote_types(x.dtype, torch.float32)
    inv_freq = 1.0 / base ** (torch.arange(0, d, 2, device=x.device, dtype=dtype) / d)
    angles = positions.to(dtype)[:, None] * inv_freq
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


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

    def forward(self, x, cache=None):
        B, T, D = x.shape
        H, Hkv, hd = self.num_heads, self.num_kv_heads, self.head_dim
        past = 0 if cache is None else cache[0].size(2)
        pos = torch.arange(past, past + T, device=x.device)

        q = apply_rope(self.W_q(x).view(B, T, H, hd).transpose(1, 2), pos, self.rope_base)
        k = apply_rope(self.W_k(x).view(B, T, Hkv, hd).transpose(1, 2), pos, self.rope_base)
        v = self.W_v(x).view(B, T, Hkv, hd).transpose(1, 2)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)

        rep = H // Hkv
        k_r = k.repeat_interleave(rep, dim=1)
        v_r = v.repeat_interleave(rep, dim=1)
        scores = q @ k_r.transpose(-2, -1) / math.sqrt(hd)
        Tk = k.size(2)
        future = torch.ones(T, Tk, dtype=torch.bool, device=x.device).triu(diagonal=past + 1)
        scores = scores.masked_fill(future, 0.0)
        attn = torch.softmax(scores, dim=-1)
        y = (attn @ v_r).transpose(1, 2).reshape(B, T, D)
        return self.W_o(y), (k, v)
