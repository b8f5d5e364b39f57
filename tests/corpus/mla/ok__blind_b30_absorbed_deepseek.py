import math

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.dim = dim
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def precompute_cos_sin(start_pos, seqlen, dim, base, dtype, device):
    compute_dtype = torch.float64 if dtype == torch.float64 else torch.float32
    freqs = 1.0 / (base ** (torch.arange(0, dim, 2, device=device, dtype=compute_dtype) / dim))
    t = torch.arange(start_pos, start_pos + seqlen, device=device, dtype=compute_dtype)
    freqs = torch.outer(t, freqs)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_emb(x, cos, sin):
    # x: (bsz, seqlen, n_heads, rope_dim); cos/sin: (seqlen, rope_dim)
    cos = cos[:, None, :]
    sin = sin[:, None, :]
    return x * cos + rotate_half(x) * sin


class MultiHeadLatentAttention(nn.Module):
    """Absorbed MLA, the way DeepSeek-V3's inference/model.py runs it."""

    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.dim = d_model
        self.n_heads = num_heads
        self.kv_lora_rank = kv_rank
        self.qk_nope_head_dim = d_nope
        self.qk_rope_head_dim = d_rope
        self.qk_head_dim = d_nope + d_rope
        self.v_head_dim = d_v
        self.rope_theta = rope_base
        self.W_q = nn.Linear(d_model, num_heads * self.qk_head_dim, bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)
        self.softmax_scale = self.qk_head_dim ** -0.5

    def forward(self, x, cache=None):
        bsz, seqlen, _ = x.size()
        start_pos = 0 if cache is None else cache[0].size(1)
        end_pos = start_pos + seqlen
        cos, sin = precompute_cos_sin(start_pos, seqlen, self.qk_rope_head_dim, self.rope_theta, x.dtype, x.device)

        q = self.W_q(x).view(bsz, seqlen, self.n_heads, self.qk_head_dim)
        q_nope, q_pe = torch.split(q, [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
        q_pe = apply_rotary_emb(q_pe, cos, sin)

        kv = self.W_kv_a(x)
        kv, k_pe = torch.split(kv, [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        k_pe = apply_rotary_emb(k_pe.unsqueeze(2), cos, sin).squeeze(2)
        kv = self.kv_norm(kv)
        if cache is not None:
            kv_cache = torch.cat([cache[0], kv], dim=1)
            pe_cache = torch.cat([cache[1], k_pe], dim=1)
        else:
            kv_cache, pe_cache = kv, k_pe

        wkv_b = self.W_kv_b.weight.view(self.n_heads, -1, self.kv_lora_rank)
        q_nope = torch.einsum("bshd,hdc->bshc", q_nope, wkv_b[:, : self.qk_nope_head_dim])
        scores = (torch.einsum("bshc,btc->bsht", q_nope, kv_cache)
                  + torch.einsum("bshr,btr->bsht", q_pe, pe_cache)) * self.softmax_scale

        future = torch.ones(seqlen, end_pos, dtype=torch.bool, device=x.device).triu(start_pos + 1)
        scores = scores.masked_fill(future[:, None, :], float("-inf"))
        scores = scores.softmax(dim=-1)

        x = torch.einsum("bsht,btc->bshc", scores, kv_cache)
        x = torch.einsum("bshc,hdc->bshd", x, wkv_b[:, -self.v_head_dim:])
        x = self.W_o(x.flatten(2))
        return x, (kv_cache, pe_cache)
