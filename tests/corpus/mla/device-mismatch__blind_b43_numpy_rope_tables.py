"""Multi-head latent attention whose RoPE cos/sin tables are computed in NumPy and wrapped with torch.from_numpy, so they stay on the CPU and are never moved to the inputs' device."""
import math

import numpy as np
import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight


class MultiHeadLatentAttention(nn.Module):
    """DeepSeek-V2/V3 multi-head latent attention: keys and values are rebuilt from a small cached latent."""

    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.num_heads = num_heads
        self.kv_rank = kv_rank
        self.d_nope = d_nope
        self.d_rope = d_rope
        self.d_v = d_v
        self.rope_base = rope_base
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def _rope(self, x, start):
        T, dr = x.shape[-2], x.shape[-1]
        half = dr // 2
        inv_freq = self.rope_base ** (-np.arange(0, dr, 2, dtype=np.float64) / dr)
        ang = np.outer(np.arange(start, start + T, dtype=np.float64), inv_freq)  # (T, half)
        cos = torch.from_numpy(np.cos(ang)).to(x.dtype)  # CPU
        sin = torch.from_numpy(np.sin(ang)).to(x.dtype)
        x1, x2 = x[..., :half], x[..., half:]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H, dn, dr, dv = self.num_heads, self.d_nope, self.d_rope, self.d_v
        q = self.W_q(x).view(B, T, H, dn + dr).transpose(1, 2)  # (B, H, T, dn + dr)
        q_nope, q_pe = q.split([dn, dr], dim=-1)
        c_kv, k_pe = self.W_kv_a(x).split([self.kv_rank, dr], dim=-1)
        c_kv = self.kv_norm(c_kv)
        past = 0 if cache is None else cache[0].shape[1]
        q_pe = self._rope(q_pe, past)
        k_pe = self._rope(k_pe, past)
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        Tk = c_kv.shape[1]
        kv = self.W_kv_b(c_kv).view(B, Tk, H, dn + dv).transpose(1, 2)
        k_nope, v = kv.split([dn, dv], dim=-1)
        scores = q_nope @ k_nope.transpose(-2, -1) + q_pe @ k_pe[:, None].transpose(-2, -1)
        scores = scores / math.sqrt(dn + dr)
        allowed = torch.ones(T, Tk, dtype=torch.bool, device=x.device).tril(diagonal=Tk - T)
        scores = scores.masked_fill(~allowed, float("-inf"))
        w = torch.softmax(scores, dim=-1)
        out = (w @ v).transpose(1, 2).reshape(B, T, H * dv)
        return self.W_o(out), (c_kv, k_pe)
