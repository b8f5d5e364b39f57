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
        orig = x.dtype
        h = x.float() if orig in (torch.float16, torch.bfloat16) else x
        h = h - h.mean(dim=-1, keepdim=True)  # MISTAKE
        h = h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return h.to(orig) * self.weight


def rotate_half(x):
    d = x.shape[-1] // 2
    return torch.cat([-x[..., d:], x[..., :d]], dim=-1)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.num_heads = num_heads
        self.kv_rank = kv_rank
        self.d_nope, self.d_rope, self.d_v = d_nope, d_rope, d_v
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)
        inv_freq = 1.0 / (rope_base ** (torch.arange(0, d_rope, 2, dtype=torch.float64) / d_rope))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def cos_sin(self, positions, dtype):
        work = torch.float64 if dtype == torch.float64 else torch.float32
        freqs = positions.to(work)[:, None] * self.inv_freq.to(work)[None, :]
        emb = torch.cat([freqs, freqs], dim=-1)
        return emb.cos().to(dtype), emb.sin().to(dtype)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H = self.num_heads
        offset = cache[0].shape[1] if cache is not None else 0
        cos, sin = self.cos_sin(torch.arange(offset, offset + T, device=x.device), x.dtype)

        q = self.W_q(x).view(B, T, H, self.d_nope + self.d_rope).transpose(1, 2)
        q_nope, q_pe = q.split([self.d_nope, self.d_rope], dim=-1)
        q_pe = q_pe * cos + rotate_half(q_pe) * sin

        c_kv, k_pe = self.W_kv_a(x).split([self.kv_rank, self.d_rope], dim=-1)
        c_kv = self.kv_norm(c_kv)
        k_pe = k_pe * cos + rotate_half(k_pe) * sin
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        S = c_kv.shape[1]

        k_nope, v = self.W_kv_b(c_kv).view(B, S, H, -1).transpose(1, 2).split([self.d_nope, self.d_v], dim=-1)
        q_full = torch.cat([q_nope, q_pe], dim=-1)
        k_full = torch.cat([k_nope, k_pe.unsqueeze(1).expand(B, H, S, self.d_rope)], dim=-1)

        att = q_full @ k_full.transpose(-1, -2) / math.sqrt(q_full.shape[-1])
        causal = torch.ones(T, S, dtype=torch.bool, device=x.device).tril(diagonal=S - T)
        att = att.masked_fill(causal.logical_not(), float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, H * self.d_v)
        return self.W_o(y), (c_kv, k_pe)
