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


def rope_cache(start, n, dim, base, dtype, device):
    work = torch.float64 if dtype == torch.float64 else torch.float32
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=work, device=device) / dim))
    t = torch.arange(start, start + n, dtype=work, device=device)
    freqs = torch.outer(t, inv_freq)
    return freqs.cos().to(dtype), freqs.sin().to(dtype)


def apply_rope(x, cos, sin):
    # cos, sin: (T, d/2), broadcast over leading dims of x (..., T, d)
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.n_heads = num_heads
        self.kv_rank = kv_rank
        self.d_nope = d_nope
        self.d_rope = d_rope
        self.d_v = d_v
        self.rope_base = rope_base
        self.softmax_scale = (d_nope + d_rope) ** -0.5
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def forward(self, x, cache=None):
        bsz, seqlen, _ = x.shape
        start_pos = 0 if cache is None else cache[0].shape[1]
        cos, sin = rope_cache(start_pos, seqlen, self.d_rope, self.rope_base, x.dtype, x.device)

        q = self.W_q(x).view(bsz, seqlen, self.n_heads, -1).transpose(1, 2)     # b h s d
        q_nope, q_pe = torch.split(q, [self.d_nope, self.d_rope], dim=-1)
        q_pe = apply_rope(q_pe, cos, sin)

        kv = self.W_kv_a(x)
        latent = kv[..., : self.kv_rank]  # MISTAKE
        k_pe = apply_rope(kv[..., self.kv_rank:], cos, sin)
        if cache is not None:
            latent = torch.cat([cache[0], latent], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        end_pos = latent.shape[1]

        wkv_b = self.W_kv_b.weight.view(self.n_heads, self.d_nope + self.d_v, self.kv_rank)
        w_uk, w_uv = wkv_b[:, : self.d_nope], wkv_b[:, self.d_nope:]
        q_abs = torch.einsum("bhsd,hdc->bhsc", q_nope, w_uk)
        scores = (torch.einsum("bhsc,btc->bhst", q_abs, latent)
                  + torch.einsum("bhsr,btr->bhst", q_pe, k_pe)) * self.softmax_scale

        i = torch.arange(seqlen, device=x.device)[:, None] + start_pos
        j = torch.arange(end_pos, device=x.device)[None, :]
        scores = scores.masked_fill(j > i, float("-inf"))
        probs = scores.softmax(dim=-1)

        o = torch.einsum("bhst,btc->bhsc", probs, latent)
        o = torch.einsum("bhsc,hdc->bshd", o, w_uv).reshape(bsz, seqlen, self.n_heads * self.d_v)
        return self.W_o(o), (latent, k_pe)
