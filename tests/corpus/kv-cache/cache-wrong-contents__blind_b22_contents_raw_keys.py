"""kv-cache: keeps raw keys and re-rotates the whole history every call."""

import math

import torch
from torch import nn


def rope(t, positions, base):
    d = t.shape[-1]
    ct = torch.promote_types(t.dtype, torch.float32)
    inv_freq = base ** (-torch.arange(0, d, 2, device=t.device, dtype=ct) / d)
    ang = positions.to(ct).unsqueeze(-1) * inv_freq
    cos, sin = ang.cos().to(t.dtype), ang.sin().to(t.dtype)
    lo, hi = t[..., : d // 2], t[..., d // 2 :]
    return torch.cat([lo * cos - hi * sin, hi * cos + lo * sin], dim=-1)


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0):
        super().__init__()
        self.H, self.Hkv = num_heads, num_kv_heads
        self.d = d_model // num_heads
        self.base = rope_base
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, D = x.shape
        H, Hkv, d = self.H, self.Hkv, self.d
        q = self.W_q(x).view(B, T, H, d).transpose(1, 2)
        k_new = self.W_k(x).view(B, T, Hkv, d).transpose(1, 2)
        v_new = self.W_v(x).view(B, T, Hkv, d).transpose(1, 2)

        k_store = k_new if cache is None else torch.cat((cache[0], k_new), dim=2)  # MISTAKE
        v_store = v_new if cache is None else torch.cat((cache[1], v_new), dim=2)
        Tk = k_store.shape[2]

        # every key turned by its absolute position 0..Tk-1, the queries by theirs
        k_rot = rope(k_store, torch.arange(Tk, device=x.device), self.base)
        q = rope(q, torch.arange(Tk - T, Tk, device=x.device), self.base)

        rep = H // Hkv
        k_rot = k_rot.repeat_interleave(rep, dim=1)
        v_all = v_store.repeat_interleave(rep, dim=1)
        scores = torch.matmul(q, k_rot.transpose(2, 3)) / math.sqrt(d)
        future = torch.ones(T, Tk, dtype=torch.bool, device=x.device).triu(Tk - T + 1)
        scores = scores.masked_fill(future, float("-inf"))
        probs = torch.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, v_all).transpose(1, 2).contiguous().view(B, T, D)
        return self.W_o(ctx), (k_store, v_store)
