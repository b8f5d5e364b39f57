"""kv-cache: HF-style rotate_half, grouped einsum without repeating kv heads, finfo.min fill."""

import math

import torch
from torch import nn


def rotate_half(t):
    a, b = t.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


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

    def _cos_sin(self, pos, dtype):
        wt = torch.promote_types(dtype, torch.float32)
        inv = 1.0 / self.rope_base ** (torch.arange(0, self.hd, 2, device=pos.device, dtype=wt) / self.hd)
        f = pos.to(wt)[:, None] * inv[None, :]
        emb = torch.cat((f, f), dim=-1)  # (T, d): angle of pair i at i and at i + d/2
        return emb.cos().to(dtype), emb.sin().to(dtype)

    def forward(self, x, cache=None):
        B, T, D = x.shape
        nh, nkv, hd = self.nh, self.nkv, self.hd
        past = 0 if cache is None else cache[0].shape[-2]
        pos = torch.arange(past, past + T, device=x.device)
        cos, sin = self._cos_sin(pos, x.dtype)

        q = self.W_q(x).view(B, T, nh, hd).transpose(1, 2)
        k = self.W_k(x).view(B, T, nkv, hd).transpose(1, 2)
        v = self.W_v(x).view(B, T, nkv, hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if cache is not None:
            k = torch.cat((cache[0], k), dim=-2)
            v = torch.cat((cache[1], v), dim=-2)
        S = k.shape[-2]

        keep = torch.arange(S, device=x.device)[None, :] <= pos[:, None]  # key j visible to token past + i
        rep = nh // nkv
        qg = q.reshape(B, nkv, rep, T, hd)
        s = torch.einsum("bgrtd,bgsd->bgrts", qg, k) / math.sqrt(hd)
        s = s.masked_fill(~keep, torch.finfo(s.dtype).min)
        p = s.softmax(dim=-1)
        o = torch.einsum("bgrts,bgsd->btgrd", p, v).reshape(B, T, D)
        return self.W_o(o), (k, v)
