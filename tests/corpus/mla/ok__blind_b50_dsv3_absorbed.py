import math

import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.dim = dim
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        in_dtype = x.dtype
        if in_dtype in (torch.float16, torch.bfloat16):
            x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return x.to(in_dtype) * self.weight


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rope_cos_sin(positions, dim, base, like):
    ftype = torch.promote_types(like.dtype, torch.float32)
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, device=like.device, dtype=ftype) / dim))
    freqs = torch.outer(positions.to(ftype), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(like.dtype), emb.sin().to(like.dtype)


def apply_rotary(x, cos, sin):
    return x * cos + rotate_half(x) * sin


class MultiHeadLatentAttention(nn.Module):
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
        self.rope_base = rope_base
        self.softmax_scale = self.qk_head_dim ** -0.5

        self.W_q = nn.Linear(d_model, num_heads * self.qk_head_dim, bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def forward(self, x, cache=None):
        bsz, seqlen, _ = x.size()
        start_pos = 0 if cache is None else cache[0].size(1)
        end_pos = start_pos + seqlen
        pos = torch.arange(start_pos, end_pos, device=x.device)
        cos, sin = rope_cos_sin(pos, self.qk_rope_head_dim, self.rope_base, x)

        q = self.W_q(x).view(bsz, seqlen, self.n_heads, self.qk_head_dim)
        q_nope, q_pe = torch.split(q, [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
        q_pe = apply_rotary(q_pe, cos[:, None], sin[:, None])

        kv = self.W_kv_a(x)
        kv, k_pe = torch.split(kv, [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        kv = self.kv_norm(kv)
        k_pe = apply_rotary(k_pe, cos, sin)
        if cache is not None:
            kv = torch.cat([cache[0], kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)

        # absorb W_kv_b: keys into the query, values into the output
        wkv_b = self.W_kv_b.weight.view(self.n_heads, -1, self.kv_lora_rank)
        q_nope = torch.einsum("bshd,hdc->bshc", q_nope, wkv_b[:, : self.qk_nope_head_dim])
        scores = (torch.einsum("bshc,btc->bsht", q_nope, kv)
                  + torch.einsum("bshr,btr->bsht", q_pe, k_pe)) * self.softmax_scale

        mask = torch.full((seqlen, end_pos), float("-inf"), device=x.device, dtype=scores.dtype)
        mask = mask.triu(start_pos + 1)
        scores = scores + mask[:, None, :]
        scores = scores.softmax(dim=-1)

        out = torch.einsum("bsht,btc->bshc", scores, kv)
        out = torch.einsum("bshc,hdc->bshd", out, wkv_b[:, -self.v_head_dim:])
        out = self.W_o(out.flatten(2))
        return out, (kv, k_pe)
