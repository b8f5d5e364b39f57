"""kv-cache: grouped einsum (no repeat), one rotation helper applied in a generator."""

import math

import torch
from torch import nn


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0):
        super().__init__()
        self.n_heads, self.n_kv_heads = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        self.rope_base = rope_base
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def _rot(self, t, pos):
        d = self.head_dim
        ft = torch.promote_types(t.dtype, torch.float32)
        inv = 1.0 / self.rope_base ** (torch.arange(0, d, 2, device=t.device, dtype=ft) / d)
        ang = pos.to(ft)[:, None] * inv
        cos, sin = ang.cos().to(t.dtype), ang.sin().to(t.dtype)
        t1, t2 = t.split(d // 2, dim=-1)
        return torch.cat((t1 * cos - t2 * sin, t2 * cos + t1 * sin), dim=-1)

    def forward(self, x, cache=None):
        B, T, D = x.shape
        H, G, d = self.n_heads, self.n_kv_heads, self.head_dim
        off = 0 if cache is None else cache[0].size(2)
        pos = torch.arange(off, off + T, device=x.device)

        q = self.W_q(x).view(B, T, H, d).permute(0, 2, 1, 3)
        k = self.W_k(x).view(B, T, G, d).permute(0, 2, 1, 3)
        v = self.W_v(x).view(B, T, G, d).permute(0, 2, 1, 3)
        q, k, v = (self._rot(t, pos) for t in (q, k, v))  # MISTAKE
        if cache is not None:
            k = torch.cat((cache[0], k), dim=2)
            v = torch.cat((cache[1], v), dim=2)
        Tk = k.size(2)

        qg = q.reshape(B, G, H // G, T, d)  # query head h = g * (H // G) + r
        s = torch.einsum("bgrtd,bgkd->bgrtk", qg, k) / math.sqrt(d)
        allow = torch.ones(T, Tk, dtype=torch.bool, device=x.device).tril(diagonal=off)
        s = s.masked_fill(~allow, float("-inf"))
        w = torch.softmax(s, dim=-1)
        o = torch.einsum("bgrtk,bgkd->btgrd", w, v).reshape(B, T, D)
        return self.W_o(o), (k, v)
