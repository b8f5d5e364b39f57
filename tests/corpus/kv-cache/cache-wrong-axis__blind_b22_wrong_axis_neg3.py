"""kv-cache: vectorised, negative dims and unflatten, n_rep read off the tensor."""

import math

import torch
from torch import nn


def _rope(x, pos, base):
    d = x.size(-1)
    wdt = torch.promote_types(x.dtype, torch.float32)
    inv = 1.0 / (base ** (torch.arange(0, d, 2, dtype=wdt, device=x.device) / d))
    freqs = torch.outer(pos.to(wdt), inv)
    cos, sin = freqs.cos().to(x.dtype), freqs.sin().to(x.dtype)
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)


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

    def forward(self, x, cache=None):
        B, L, D = x.shape
        past = cache[0].size(-2) if cache is not None else 0
        pos = torch.arange(past, past + L, device=x.device)
        q = self.W_q(x).unflatten(-1, (self.num_heads, self.head_dim)).transpose(1, 2)
        k = self.W_k(x).unflatten(-1, (self.num_kv_heads, self.head_dim)).transpose(1, 2)
        v = self.W_v(x).unflatten(-1, (self.num_kv_heads, self.head_dim)).transpose(1, 2)
        q, k = _rope(q, pos, self.rope_base), _rope(k, pos, self.rope_base)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=-3)  # MISTAKE
            v = torch.cat([cache[1], v], dim=-3)
        n_rep = self.num_heads // k.size(1)
        kr = k.repeat_interleave(n_rep, dim=1)
        vr = v.repeat_interleave(n_rep, dim=1)
        S = k.size(-2)
        att = (q @ kr.transpose(-1, -2)) * self.head_dim ** -0.5
        qi = torch.arange(L, device=x.device)[:, None] + (S - L)
        kj = torch.arange(S, device=x.device)[None, :]
        att = att.masked_fill(kj > qi, float("-inf"))
        att = att.softmax(dim=-1)
        out = (att @ vr).transpose(1, 2).flatten(2)
        return self.W_o(out), (k, v)
