import math

import torch
import torch.nn.functional as F
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        acc = torch.promote_types(x.dtype, torch.float32)
        y = x.to(acc)
        inv_rms = (y * y).mean(-1, keepdim=True).add(self.eps).rsqrt()
        return (y * inv_rms).to(x.dtype) * self.weight


def rope(t, positions, base):
    """t (..., T, n): rotate (t[i], t[i + n/2]) by positions * base ** (-2i/n)."""
    n = t.shape[-1]
    half = n // 2
    acc = torch.promote_types(t.dtype, torch.float32)
    theta = positions.to(acc)[:, None] * base ** (-2.0 * torch.arange(half, device=t.device, dtype=acc) / n)
    cos = torch.cat([theta.cos(), theta.cos()], dim=-1).to(t.dtype)
    sin = torch.cat([theta.sin(), theta.sin()], dim=-1).to(t.dtype)
    flipped = torch.cat([-t[..., half:], t[..., :half]], dim=-1)
    return t * cos + flipped * sin


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.cfg = dict(H=num_heads, r=kv_rank, dn=d_nope, dr=d_rope, dv=d_v)
        self.rope_base = rope_base
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def forward(self, x, cache=None):
        H, r, dn, dr, dv = (self.cfg[k] for k in ("H", "r", "dn", "dr", "dv"))
        B, T, _ = x.shape
        past = 0 if cache is None else cache[0].shape[1]
        pos = torch.arange(past, past + T, device=x.device)

        q = self.W_q(x).reshape(B, T, H, dn + dr)
        q_nope = q[..., :dn].transpose(1, 2)
        q_pe = rope(q[..., dn:].transpose(1, 2), pos, self.rope_base)

        a = self.W_kv_a(x)
        c_kv = self.kv_norm(a[..., :r])
        k_pe = rope(a[..., r:], pos, self.rope_base)
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        S = c_kv.shape[1]

        kv = self.W_kv_b(c_kv)
        k_nope, v = kv.split([H * dn, H * dv], dim=-1)  # MISTAKE: W_kv_b's output is per head [k_nope | v], not all keys then all values
        k_nope = k_nope.reshape(B, S, H, dn).transpose(1, 2)
        v = v.reshape(B, S, H, dv).transpose(1, 2)

        scores = torch.matmul(q_nope, k_nope.transpose(-2, -1))
        scores = scores + torch.matmul(q_pe, k_pe.unsqueeze(1).transpose(-2, -1))
        scores = scores / math.sqrt(dn + dr)
        i = torch.arange(T, device=x.device)[:, None] + past
        j = torch.arange(S, device=x.device)[None, :]
        scores = scores.masked_fill(j > i, float("-inf"))
        probs = F.softmax(scores, dim=-1)
        out = torch.matmul(probs, v).transpose(1, 2).reshape(B, T, H * dv)
        return self.W_o(out), (c_kv, k_pe)
