"""Cached GQA self-attention with RoPE, written without repeating the kv heads: the rotated queries are
viewed as (B, Hkv, G, T, d) groups and contracted against their own kv head with einsum; the causal mask
comes from comparing absolute key indices with the new tokens' positions T_past.. . The returned cache
holds the rotated keys and the raw values, Hkv heads. Correct (unusual style: grouped einsum, position
comparison mask)."""

import math

import torch
from torch import nn


def _rope(x, pos, base):
    d = x.shape[-1]
    h = d // 2
    wd = torch.promote_types(x.dtype, torch.float32)
    inv = base ** (-torch.arange(h, dtype=wd, device=x.device) * 2 / d)
    ang = pos.to(wd)[:, None] * inv
    c, s = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    x1, x2 = x[..., :h], x[..., h:]
    return torch.cat([x1 * c - x2 * s, x1 * s + x2 * c], dim=-1)


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0):
        super().__init__()
        self.H, self.Hkv, self.d = num_heads, num_kv_heads, d_model // num_heads
        self.base = rope_base
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, D = x.shape
        H, Hkv, d = self.H, self.Hkv, self.d
        G = H // Hkv
        past = 0 if cache is None else cache[0].shape[-2]
        pos = torch.arange(past, past + T, device=x.device)
        q = _rope(self.W_q(x).view(B, T, H, d).transpose(1, 2), pos, self.base)
        k = _rope(self.W_k(x).view(B, T, Hkv, d).transpose(1, 2), pos, self.base)
        v = self.W_v(x).view(B, T, Hkv, d).transpose(1, 2)
        if cache is not None:
            k = torch.cat((cache[0], k), dim=-2)
            v = torch.cat((cache[1], v), dim=-2)
        S = k.shape[-2]
        s = torch.einsum("bkgtd,bksd->bkgts", q.reshape(B, Hkv, G, T, d), k) / math.sqrt(d)
        allowed = torch.arange(S, device=x.device)[None, :] <= pos[:, None]
        s = s.masked_fill(~allowed, float("-inf"))
        p = s.softmax(dim=-1)
        y = torch.einsum("bkgts,bksd->bkgtd", p, v).reshape(B, H, T, d)
        y = y.transpose(1, 2).reshape(B, T, D)
        return self.W_o(y), (k, v)
