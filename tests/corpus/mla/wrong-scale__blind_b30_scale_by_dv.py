import math

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    x1, x2 = torch.chunk(x, 2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class MultiHeadLatentAttention(nn.Module):
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
        self.scale = 1.0 / math.sqrt(d_v)  # MISTAKE

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H = self.num_heads
        past = 0 if cache is None else cache[0].shape[1]

        work = torch.float64 if x.dtype == torch.float64 else torch.float32
        inv_freq = 1.0 / self.rope_base ** (torch.arange(0, self.d_rope, 2, device=x.device, dtype=work) / self.d_rope)
        t = torch.arange(past, past + T, device=x.device, dtype=work)
        emb = torch.outer(t, inv_freq).repeat(1, 2)
        cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)

        q = self.W_q(x).view(B, T, H, self.d_nope + self.d_rope).transpose(1, 2)
        q_nope, q_pe = q.split([self.d_nope, self.d_rope], dim=-1)
        q_pe = q_pe * cos + rotate_half(q_pe) * sin

        kv_a = self.W_kv_a(x)
        c_kv, k_pe = kv_a.split([self.kv_rank, self.d_rope], dim=-1)
        c_kv = self.kv_norm(c_kv)
        k_pe = k_pe * cos + rotate_half(k_pe) * sin
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        S = c_kv.shape[1]

        kv = self.W_kv_b(c_kv).view(B, S, H, self.d_nope + self.d_v).transpose(1, 2)
        k_nope, v = kv.split([self.d_nope, self.d_v], dim=-1)

        scores = (q_nope @ k_nope.transpose(-1, -2) + q_pe @ k_pe.unsqueeze(1).transpose(-1, -2)) * self.scale
        causal = torch.ones(T, S, dtype=torch.bool, device=x.device).tril(diagonal=past)
        scores = scores.masked_fill(~causal, float("-inf"))
        attn = scores.softmax(dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(B, T, H * self.d_v)
        return self.W_o(out), (c_kv, k_pe)
