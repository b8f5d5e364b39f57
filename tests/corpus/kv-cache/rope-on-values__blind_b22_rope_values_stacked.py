"""kv-cache: keys and values projected and carried as one stacked kv tensor."""

import math

import torch
from torch import nn


def rope_(t, positions, base):
    d = t.size(-1)
    wt = torch.promote_types(t.dtype, torch.float32)
    freqs = base ** (-torch.arange(0, d, 2, device=t.device, dtype=wt) / d)
    ang = torch.outer(positions.to(wt), freqs)
    cos, sin = ang.cos().to(t.dtype), ang.sin().to(t.dtype)
    a, b = t[..., : d // 2], t[..., d // 2 :]
    return torch.cat((a * cos - b * sin, b * cos + a * sin), dim=-1)


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0):
        super().__init__()
        self.H, self.KV = num_heads, num_kv_heads
        self.hd = d_model // num_heads
        self.base = rope_base
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.hd, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.hd, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, D = x.shape
        H, KV, hd = self.H, self.KV, self.hd
        n_past = 0 if cache is None else cache[0].shape[2]
        positions = torch.arange(n_past, n_past + T, device=x.device)

        q = rope_(self.W_q(x).view(B, T, H, hd).transpose(1, 2), positions, self.base)
        kv = torch.stack((self.W_k(x), self.W_v(x)), dim=0).view(2, B, T, KV, hd).transpose(2, 3)
        kv = rope_(kv, positions, self.base)  # MISTAKE
        if cache is not None:
            kv = torch.cat((torch.stack(cache), kv), dim=3)
        k, v = kv.unbind(0)  # (B, KV, Tk, hd) each
        Tk = k.shape[2]

        k_h = k.repeat_interleave(H // KV, dim=1)
        v_h = v.repeat_interleave(H // KV, dim=1)
        att = q @ k_h.transpose(-2, -1) / math.sqrt(hd)
        i = torch.arange(T, device=x.device).view(T, 1)
        j = torch.arange(Tk, device=x.device).view(1, Tk)
        att = att.masked_fill(j > i + n_past, float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = (att @ v_h).permute(0, 2, 1, 3).reshape(B, T, D)
        return self.W_o(y), (k, v)
