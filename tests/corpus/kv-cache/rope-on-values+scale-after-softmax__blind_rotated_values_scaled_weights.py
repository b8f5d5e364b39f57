"""RoPE is applied to the values as well as to q and k, and 1/sqrt(d) multiplies the softmax weights instead of the scores."""

import math

import torch
import torch.nn as nn


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

    def _rotate(self, t, positions):
        d = t.size(-1)
        half = d // 2
        adt = torch.promote_types(t.dtype, torch.float32)
        exponent = torch.arange(half, device=t.device, dtype=adt) / half  # = 2i/d
        theta = positions.to(adt)[:, None] / (self.rope_base ** exponent)[None, :]
        cos = theta.cos().to(t.dtype)
        sin = theta.sin().to(t.dtype)
        first, second = t[..., :half], t[..., half:]
        return torch.cat([first * cos - second * sin, first * sin + second * cos], dim=-1)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        n_past = 0 if cache is None else cache[0].shape[2]
        pos = torch.arange(n_past, n_past + T, device=x.device)

        def heads(t, n):
            return t.view(B, T, n, self.head_dim).transpose(1, 2)

        q = self._rotate(heads(self.W_q(x), self.num_heads), pos)
        k = self._rotate(heads(self.W_k(x), self.num_kv_heads), pos)
        v = self._rotate(heads(self.W_v(x), self.num_kv_heads), pos)
        if cache is not None:
            k = torch.cat((cache[0], k), dim=2)
            v = torch.cat((cache[1], v), dim=2)

        rep = self.num_heads // self.num_kv_heads
        kk = k.repeat_interleave(rep, dim=1)
        vv = v.repeat_interleave(rep, dim=1)

        scores = q @ kk.transpose(-2, -1)
        total = kk.shape[2]
        visible = torch.ones(T, total, dtype=torch.bool, device=x.device).tril(n_past)
        scores = scores.masked_fill(~visible, float("-inf"))
        weights = torch.softmax(scores, dim=-1) / math.sqrt(self.head_dim)
        out = (weights @ vv).transpose(1, 2).reshape(B, T, self.num_heads * self.head_dim)
        return self.W_o(out), (k, v)
