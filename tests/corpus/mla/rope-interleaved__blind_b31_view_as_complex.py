import math

import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.dim = dim
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor):
        rms = torch.sqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return (x / rms) * self.weight


def precompute_freqs_cis(dim: int, positions: torch.Tensor, base: float) -> torch.Tensor:
    freqs = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float64, device=positions.device) / dim))
    freqs = torch.outer(positions.to(torch.float64), freqs)
    return torch.polar(torch.ones_like(freqs), freqs)


def apply_rotary_emb(x: torch.Tensor, freqs_cis: torch.Tensor) -> torch.Tensor:
    dtype = x.dtype
    work = torch.float64 if dtype == torch.float64 else torch.float32
    x = torch.view_as_complex(x.to(work).clone(memory_format=torch.contiguous_format).view(*x.shape[:-1], -1, 2))  # MISTAKE
    freqs_cis = freqs_cis.view(1, x.size(1), 1, x.size(-1)).to(x.dtype)
    y = torch.view_as_real(x * freqs_cis).flatten(3)
    return y.to(dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
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

    def forward(self, x: torch.Tensor, cache=None):
        bsz, seqlen, _ = x.size()
        start_pos = 0 if cache is None else cache[0].size(1)
        end_pos = start_pos + seqlen
        freqs_cis = precompute_freqs_cis(self.qk_rope_head_dim,
                                         torch.arange(start_pos, end_pos, device=x.device), self.rope_theta)

        q = self.W_q(x).view(bsz, seqlen, self.n_heads, self.qk_head_dim)
        q_nope, q_pe = torch.split(q, [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
        q_pe = apply_rotary_emb(q_pe, freqs_cis)
        kv = self.W_kv_a(x)
        kv, k_pe = torch.split(kv, [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        k_pe = apply_rotary_emb(k_pe.unsqueeze(2), freqs_cis).squeeze(2)
        kv = self.kv_norm(kv)
        if cache is not None:
            kv = torch.cat([cache[0], kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)

        wkv_b = self.W_kv_b.weight.view(self.n_heads, -1, self.kv_lora_rank)
        q_nope = torch.einsum("bshd,hdc->bshc", q_nope, wkv_b[:, :self.qk_nope_head_dim])
        scores = (torch.einsum("bshc,btc->bsht", q_nope, kv)
                  + torch.einsum("bshr,btr->bsht", q_pe, k_pe)) * self.softmax_scale
        mask = torch.full((seqlen, end_pos), float("-inf"), device=x.device).triu_(start_pos + 1)
        scores = scores + mask.to(scores.dtype).unsqueeze(1)
        scores = scores.softmax(dim=-1)
        x = torch.einsum("bsht,btc->bshc", scores, kv)
        x = torch.einsum("bshc,hdc->bshd", x, wkv_b[:, -self.v_head_dim:])
        return self.W_o(x.flatten(2)), (kv, k_pe)
