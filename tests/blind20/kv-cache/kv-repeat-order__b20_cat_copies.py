"""Cached GQA self-attention that makes H kv heads out of Hkv by concatenating G copies of the kv
tensor along the head axis. Mistake: torch.cat([k] * G, dim=1) tiles the heads (0, 1, .., Hkv-1, 0, 1,
..), so query head h reads kv head h % Hkv instead of h // G; right only when Hkv == 1 or Hkv == H."""

import math

import torch
from torch import nn


def rope(x, positions, base):
    d = x.size(-1)
    freqs = 1.0 / base ** (torch.arange(0, d, 2, dtype=torch.float32, device=x.device) / d)
    angles = positions.float()[:, None] * freqs[None, :]
    cos, sin = torch.cos(angles).to(x.dtype), torch.sin(angles).to(x.dtype)
    first, second = x.split(d // 2, dim=-1)
    return torch.cat([first * cos - second * sin, second * cos + first * sin], dim=-1)


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
        start = 0 if cache is None else cache[0].size(-2)
        positions = torch.arange(start, start + T, device=x.device)
        q = rope(self.W_q(x).view(B, T, self.H, self.d).transpose(1, 2), positions, self.base)
        k = rope(self.W_k(x).view(B, T, self.Hkv, self.d).transpose(1, 2), positions, self.base)
        v = self.W_v(x).view(B, T, self.Hkv, self.d).transpose(1, 2)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=-2)
            v = torch.cat([cache[1], v], dim=-2)
        G = self.H // self.Hkv
        k_h = torch.cat([k] * G, dim=1)  # MISTAKE
        v_h = torch.cat([v] * G, dim=1)
        att = torch.matmul(q, k_h.transpose(-2, -1)) / math.sqrt(self.d)
        Tk = k.size(-2)
        causal = torch.arange(Tk, device=x.device)[None, :] > positions[:, None]
        att = att.masked_fill(causal, float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = torch.matmul(att, v_h).transpose(1, 2).reshape(B, T, D)
        return self.W_o(y), (k, v)
