"""Exercise kv-cache: LLaMA-style attention with grouped kv heads, RoPE and a KV cache."""

import math

import torch
from torch import nn


def rope(t, pos, base):
    d = t.shape[-1]
    wide = torch.promote_types(t.dtype, torch.float32)
    freqs = base ** (-torch.arange(0, d, 2, device=t.device, dtype=wide) / d)
    ang = pos.to(wide)[:, None] * freqs
    cos, sin = ang.cos().to(t.dtype), ang.sin().to(t.dtype)
    t1, t2 = t.chunk(2, dim=-1)
    return torch.cat([t1 * cos - t2 * sin, t2 * cos + t1 * sin], dim=-1)


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0):
        super().__init__()
        self.nh, self.nkv = num_heads, num_kv_heads
        self.hd = d_model // num_heads
        self.rope_base = rope_base
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.hd, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.hd, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, D = x.shape
        past = cache[0].size(2) if cache is not None else 0
        pos = torch.arange(past, past + T, device=x.device)
        q = self.W_q(x).view(B, T, self.nh, self.hd).transpose(1, 2)
        k = self.W_k(x).view(B, T, self.nkv, self.hd).transpose(1, 2)
        v = self.W_v(x).view(B, T, self.nkv, self.hd).transpose(1, 2)
        q, k, v = (rope(t, pos, self.rope_base) for t in (q, k, v))  # MISTAKE
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        rep = self.nh // self.nkv
        kk = k.repeat_interleave(rep, dim=1)
        vv = v.repeat_interleave(rep, dim=1)
        att = (q @ kk.transpose(-1, -2)) * (1.0 / math.sqrt(self.hd))
        Tk = kk.size(2)
        allowed = torch.arange(Tk, device=x.device)[None, :] <= pos[:, None]
        att = att.masked_fill(~allowed, float("-inf")).softmax(dim=-1)
        y = (att @ vv).transpose(1, 2).reshape(B, T, D)
        return self.W_o(y), (k, v)
