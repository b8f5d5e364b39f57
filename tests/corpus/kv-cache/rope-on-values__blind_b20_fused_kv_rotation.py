"""Cached GQA self-attention that rotates keys and values together: k and v are stacked along the head
axis, passed through RoPE once and split again (the candidate saves a call). Mistake: RoPE is applied
to the values as well as to q and k; the values (and the cached values) come out rotated."""

import math

import torch
from torch import nn


def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    wd = torch.promote_types(x.dtype, torch.float32)
    inv_freq = base ** (-torch.arange(0, d, 2, device=x.device, dtype=wd) / d)
    theta = positions.to(wd)[:, None] * inv_freq
    cos, sin = theta.cos().to(x.dtype), theta.sin().to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0):
        super().__init__()
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
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
        kv = torch.cat([self.W_k(x).view(B, T, Hkv, d), self.W_v(x).view(B, T, Hkv, d)], dim=2).transpose(1, 2)
        k, v = apply_rope(kv, pos, self.rope_base).split(Hkv, dim=1)  # MISTAKE
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        Tk = T_past + T
        k_rep = k.repeat_interleave(H // Hkv, dim=1)
        v_rep = v.repeat_interleave(H // Hkv, dim=1)
        scores = q @ k_rep.transpose(-2, -1) / math.sqrt(d)
        visible = torch.ones(T, Tk, dtype=torch.bool, device=x.device).tril(diagonal=T_past)
        weights = torch.softmax(scores.masked_fill(~visible, float("-inf")), dim=-1)
        y = (weights @ v_rep).transpose(1, 2).reshape(B, T, D)
        return self.W_o(y), (k, v)
