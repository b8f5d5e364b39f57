"""Correct: cos/sin tables precomputed in __init__ as buffers (sliced at the cache offset), a loop over the
query heads, and a mask from tril of the full square, bottom rows."""

import math

import torch
from torch import nn

MAX_LEN = 256


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, rope_base=10000.0):
        super().__init__()
        self.n_head, self.n_kv = num_heads, num_kv_heads
        self.hs = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.hs, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.hs, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)
        freqs = rope_base ** (-torch.arange(0, self.hs, 2).float() / self.hs)
        angles = torch.outer(torch.arange(MAX_LEN).float(), freqs)
        self.register_buffer("cos_t", angles.cos(), persistent=False)
        self.register_buffer("sin_t", angles.sin(), persistent=False)
        self.register_buffer("tri", torch.tril(torch.ones(MAX_LEN, MAX_LEN, dtype=torch.bool)), persistent=False)

    def rotate(self, t, start):
        n = t.size(2)
        cos, sin = self.cos_t[start:start + n].to(t.dtype), self.sin_t[start:start + n].to(t.dtype)
        h = self.hs // 2
        t1, t2 = t[..., :h], t[..., h:]
        return torch.cat([t1 * cos - t2 * sin, t2 * cos + t1 * sin], dim=-1)

    def forward(self, x, cache=None):
        B, T, C = x.size()
        start = cache[0].size(2) if cache is not None else 0
        q = self.rotate(self.W_q(x).view(B, T, self.n_head, self.hs).transpose(1, 2), start)
        k = self.rotate(self.W_k(x).view(B, T, self.n_kv, self.hs).transpose(1, 2), start)
        v = self.W_v(x).view(B, T, self.n_kv, self.hs).transpose(1, 2)
        if cache is not None:
            k = torch.cat((cache[0], k), dim=2)
            v = torch.cat((cache[1], v), dim=2)
        L = start + T
        mask = self.tri[start:L, :L]  # the last T rows of the (L, L) lower triangle
        group = self.n_head // self.n_kv
        heads = []
        for h in range(self.n_head):
            kh, vh = k[:, h // group], v[:, h // group]
            att = (q[:, h] @ kh.transpose(-2, -1)) * (1.0 / math.sqrt(self.hs))
            att = att.masked_fill(~mask, torch.finfo(att.dtype).min)
            heads.append(torch.softmax(att, dim=-1) @ vh)
        y = torch.stack(heads, dim=1).transpose(1, 2).reshape(B, T, C)
        return self.W_o(y), (k, v)
