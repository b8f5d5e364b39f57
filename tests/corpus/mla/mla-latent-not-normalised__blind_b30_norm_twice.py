import math

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight


class RotaryEmbedding(nn.Module):
    def __init__(self, dim, base=10000.0):
        super().__init__()
        self.dim = dim
        self.base = base

    def forward(self, x, positions):
        work = torch.float64 if x.dtype == torch.float64 else torch.float32
        inv_freq = 1.0 / (self.base ** (torch.arange(0, self.dim, 2, device=x.device, dtype=work) / self.dim))
        freqs = positions.to(work)[:, None] * inv_freq
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
        half = self.dim // 2
        rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
        return x * cos + rotated * sin


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.num_heads = num_heads
        self.kv_rank = kv_rank
        self.d_nope = d_nope
        self.d_rope = d_rope
        self.d_v = d_v
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)
        self.rotary = RotaryEmbedding(d_rope, rope_base)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H = self.num_heads
        past_c, past_pe = cache if cache is not None else (None, None)
        t0 = 0 if past_c is None else past_c.shape[1]
        positions = torch.arange(t0, t0 + T, device=x.device)

        q = self.W_q(x).view(B, T, H, -1).transpose(1, 2)
        q_nope, q_pe = q[..., : self.d_nope], q[..., self.d_nope:]
        q_pe = self.rotary(q_pe, positions)

        kv_a = self.W_kv_a(x)
        c_kv = self.kv_norm(kv_a[..., : self.kv_rank])
        k_pe = self.rotary(kv_a[..., self.kv_rank:], positions)
        if past_c is not None:
            c_kv = torch.cat([past_c, c_kv], dim=1)
            k_pe = torch.cat([past_pe, k_pe], dim=1)
        S = c_kv.shape[1]

        kv = self.W_kv_b(self.kv_norm(c_kv))  # MISTAKE
        kv = kv.view(B, S, H, self.d_nope + self.d_v).transpose(1, 2)
        k_nope, v = kv[..., : self.d_nope], kv[..., self.d_nope:]

        scores = q_nope @ k_nope.transpose(-2, -1) + q_pe @ k_pe[:, None].transpose(-2, -1)
        scores = scores * (self.d_nope + self.d_rope) ** -0.5
        allowed = torch.ones(T, S, dtype=torch.bool, device=x.device).tril(S - T)
        scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
        w = scores.softmax(dim=-1)
        out = (w @ v).transpose(1, 2).contiguous().view(B, T, H * self.d_v)
        return self.W_o(out), (c_kv, k_pe)
