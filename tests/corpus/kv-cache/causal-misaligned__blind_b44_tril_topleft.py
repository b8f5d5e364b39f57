import math

import torch
from torch import nn


def rope(x, pos, base):
    d = x.shape[-1]
    half = d // 2
    wdt = torch.promote_types(x.dtype, torch.float32)
    inv_freq = base ** (-torch.arange(half, device=x.device, dtype=wdt) * 2 / d)
    ang = pos.to(wdt)[:, None] * inv_freq
    c, s = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], -1)


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0):
        super().__init__()
        self.H = num_heads
        self.Hkv = num_kv_heads
        self.d = d_model // num_heads
        self.base = rope_base
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, D = x.shape
        H, Hkv, d = self.H, self.Hkv, self.d
        start = 0 if cache is None else cache[0].size(2)
        pos = torch.arange(start, start + T, device=x.device)

        q = rope(self.W_q(x).view(B, T, H, d).transpose(1, 2), pos, self.base)
        k = rope(self.W_k(x).view(B, T, Hkv, d).transpose(1, 2), pos, self.base)
        v = self.W_v(x).view(B, T, Hkv, d).transpose(1, 2)
        if cache is not None:
            k = torch.cat((cache[0], k), dim=2)
            v = torch.cat((cache[1], v), dim=2)
        Tk = k.size(2)

        kk = k.repeat_interleave(H // Hkv, dim=1)
        vv = v.repeat_interleave(H // Hkv, dim=1)
        att = q @ kk.transpose(-2, -1) / math.sqrt(d)
        mask = torch.tril(torch.ones(T, Tk, dtype=torch.bool, device=x.device))  # MISTAKE
        att = att.masked_fill(~mask, float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = (att @ vv).transpose(1, 2).contiguous().view(B, T, D)
        return self.W_o(y), (k, v)
