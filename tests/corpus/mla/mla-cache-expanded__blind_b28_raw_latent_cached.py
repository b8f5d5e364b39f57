import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rope(x, positions, base):
    # x (..., T, d); positions (T,)
    d = x.shape[-1]
    ang_dtype = torch.promote_types(x.dtype, torch.float32)
    inv_freq = base ** (-torch.arange(0, d, 2, device=x.device, dtype=ang_dtype) / d)
    ang = positions.to(ang_dtype)[:, None] * inv_freq[None, :]
    ang = torch.cat((ang, ang), dim=-1)
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    return x * cos + rotate_half(x) * sin


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

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H = self.num_heads
        past = 0 if cache is None else cache[0].shape[1]
        pos = torch.arange(past, past + T, device=x.device)

        q = self.W_q(x).view(B, T, H, self.d_nope + self.d_rope).transpose(1, 2)
        q_nope, q_pe = q.split([self.d_nope, self.d_rope], dim=-1)
        q_pe = rope(q_pe, pos, self.rope_base)

        c_kv, k_pe = self.W_kv_a(x).split([self.kv_rank, self.d_rope], dim=-1)
        k_pe = rope(k_pe, pos, self.rope_base)
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        Tk = c_kv.shape[1]

        latent = self.kv_norm(c_kv)   # normalise the whole latent when reading it
        kv = self.W_kv_b(latent).view(B, Tk, H, self.d_nope + self.d_v).transpose(1, 2)
        k_nope, v = kv.split([self.d_nope, self.d_v], dim=-1)

        scores = q_nope @ k_nope.transpose(-2, -1) + q_pe @ k_pe.unsqueeze(1).transpose(-2, -1)
        scores = scores / math.sqrt(self.d_nope + self.d_rope)
        future = torch.ones(T, Tk, dtype=torch.bool, device=x.device).triu(Tk - T + 1)
        scores = scores.masked_fill(future, float("-inf"))
        weights = F.softmax(scores, dim=-1)
        out = (weights @ v).transpose(1, 2).reshape(B, T, H * self.d_v)
        return self.W_o(out), (c_kv, k_pe)  # MISTAKE: the cached latent is the raw one, before kv_norm
