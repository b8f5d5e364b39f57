"""Cached GQA self-attention that keeps the raw (unrotated) keys in the cache and rotates the whole key
sequence at positions 0..T_past+T_new-1 on every call. Used only with its own caches this gives the
right outputs. Mistake: the returned cache holds unrotated keys, not rotated ones as the contract says
(and a cache of rotated keys handed in is rotated a second time)."""

import math

import torch
from torch import nn


def rope(x, positions, base):
    d = x.shape[-1]
    inv = base ** (-torch.arange(0, d, 2, dtype=torch.float64, device=x.device) / d)
    th = positions.to(torch.float64)[:, None] * inv
    cos, sin = th.cos().to(x.dtype), th.sin().to(x.dtype)
    lo, hi = x[..., : d // 2], x[..., d // 2 :]
    return torch.cat([lo * cos - hi * sin, hi * cos + lo * sin], dim=-1)


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
        k_new = self.W_k(x).view(B, T, Hkv, d).transpose(1, 2)
        v_new = self.W_v(x).view(B, T, Hkv, d).transpose(1, 2)
        if cache is None:
            k_raw, v_all = k_new, v_new
        else:
            k_raw = torch.cat([cache[0], k_new], dim=2)
            v_all = torch.cat([cache[1], v_new], dim=2)
        Tk = k_raw.shape[2]
        past = Tk - T
        all_pos = torch.arange(Tk, device=x.device)
        k_rot = rope(k_raw, all_pos, self.rope_base)
        q = rope(self.W_q(x).view(B, T, H, d).transpose(1, 2), all_pos[past:], self.rope_base)
        g = H // Hkv
        kr = k_rot.repeat_interleave(g, dim=1)
        vr = v_all.repeat_interleave(g, dim=1)
        s = q @ kr.transpose(-2, -1) / math.sqrt(d)
        s = s.masked_fill(all_pos[None, :] > all_pos[past:, None], float("-inf"))
        w = torch.softmax(s, dim=-1)
        y = (w @ vr).transpose(1, 2).reshape(B, T, D)
        return self.W_o(y), (k_raw, v_all)  # MISTAKE
