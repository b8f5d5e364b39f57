import math

import torch
from torch import nn


def _rot(t, pos, base):
    n = t.size(-1)
    acc = torch.promote_types(t.dtype, torch.float32)
    inv = torch.exp(-math.log(base) * torch.arange(0, n, 2, device=t.device, dtype=acc) / n)
    ang = pos.to(acc)[:, None] * inv
    c, s = ang.cos().to(t.dtype), ang.sin().to(t.dtype)
    lo, hi = t.chunk(2, dim=-1)
    return torch.cat((lo * c - hi * s, hi * c + lo * s), dim=-1)


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0):
        super().__init__()
        self.h, self.hkv = num_heads, num_kv_heads
        self.dh = d_model // num_heads
        self.base = rope_base
        self.inv_sqrt_d = 1.0 / math.sqrt(self.dh)
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.dh, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.dh, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, D = x.shape
        past = cache[0].size(2) if cache is not None else 0
        pos = torch.arange(past, past + T, device=x.device)

        q = self.W_q(x).unflatten(-1, (self.h, self.dh)).transpose(1, 2)
        k = self.W_k(x).unflatten(-1, (self.hkv, self.dh)).transpose(1, 2)
        v = self.W_v(x).unflatten(-1, (self.hkv, self.dh)).transpose(1, 2)
        q, k = _rot(q, pos, self.base), _rot(k, pos, self.base)

        k_all = k if cache is None else torch.cat((cache[0], k), dim=2)
        v_all = v if cache is None else torch.cat((cache[1], v), dim=2)
        g = self.h // self.hkv
        keys = k_all.repeat_interleave(g, dim=1)  # (B, H, Tk, d)
        vals = v_all.repeat_interleave(g, dim=1)
        Tk = keys.size(2)

        s = torch.einsum("bhqd,bhkd->bhqk", q, keys) * self.inv_sqrt_d
        qi = torch.arange(T, device=x.device).view(T, 1) + past
        kj = torch.arange(Tk, device=x.device).view(1, Tk)
        s = s.masked_fill(kj > qi, float("-inf"))
        w = torch.exp(s - s.amax(dim=-1, keepdim=True))
        w = w / w.sum(dim=-1, keepdim=True)
        y = torch.einsum("bhqk,bhkd->bqhd", w, vals).reshape(B, T, D)
        new_cache = (keys, vals)  # MISTAKE: caches the kv heads repeated to H; the cache keeps the Hkv heads k_all, v_all
        return self.W_o(y), new_cache
