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
        norm = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return norm * self.weight


def apply_rope(x, pos, base):
    d = x.shape[-1]
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, device=x.device, dtype=work) / d))
    freqs = pos.to(work)[:, None] * inv_freq[None, :]
    emb = torch.cat([freqs, freqs], dim=-1)
    cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return x * cos + torch.cat([-x2, x1], dim=-1) * sin


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.n_heads = num_heads
        self.kv_rank = kv_rank
        self.d_nope, self.d_rope, self.d_v = d_nope, d_rope, d_v
        self.qk_dim = d_nope + d_rope
        self.rope_base = rope_base
        self.scale = 1.0 / math.sqrt(self.qk_dim)
        self.W_q = nn.Linear(d_model, num_heads * self.qk_dim, bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H = self.n_heads
        past = 0 if cache is None else cache[0].shape[2]
        pos = torch.arange(past, past + T, device=x.device)

        q = self.W_q(x).view(B, T, H, self.qk_dim).transpose(1, 2)
        q_nope, q_pe = torch.split(q, [self.d_nope, self.d_rope], dim=-1)
        q_pe = apply_rope(q_pe, pos, self.rope_base)

        latent, kr = torch.split(self.W_kv_a(x), [self.kv_rank, self.d_rope], dim=-1)
        latent = self.kv_norm(latent)
        kr = apply_rope(kr, pos, self.rope_base)

        kv = self.W_kv_b(latent).view(B, T, H, self.d_nope + self.d_v).transpose(1, 2)
        k_nope, v = torch.split(kv, [self.d_nope, self.d_v], dim=-1)
        k = torch.cat([k_nope, kr.unsqueeze(1).expand(-1, H, -1, -1)], dim=-1)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)

        q = torch.cat([q_nope, q_pe], dim=-1)
        scores = q @ k.transpose(-2, -1) * self.scale
        S = k.shape[2]
        allowed = torch.ones(T, S, dtype=torch.bool, device=x.device).tril(diagonal=S - T)
        scores = scores.masked_fill(~allowed, float("-inf"))
        attn = F.softmax(scores, dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(B, T, H * self.d_v)
        return self.W_o(out), (k, v)  # MISTAKE
