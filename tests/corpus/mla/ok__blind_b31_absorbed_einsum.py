import math

import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.dim = dim
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ms = (x * x).mean(dim=-1, keepdim=True)
        return x / torch.sqrt(ms + self.eps) * self.weight


def precompute_freqs_cis(dim: int, positions: torch.Tensor, base: float) -> torch.Tensor:
    freqs = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float64, device=positions.device) / dim))
    angles = torch.outer(positions.to(torch.float64), freqs)
    return torch.polar(torch.ones_like(angles), angles)


def apply_rotary_emb(x: torch.Tensor, freqs_cis: torch.Tensor) -> torch.Tensor:
    # half-split pairs: (x[i], x[i + d/2]) is the complex number x[i] + 1j * x[i + d/2]
    half = x.shape[-1] // 2
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    z = torch.complex(x[..., :half].to(work), x[..., half:].to(work))
    z = z * freqs_cis.to(z.dtype)
    return torch.cat([z.real, z.imag], dim=-1).to(x.dtype)


class MultiHeadLatentAttention(nn.Module):
    """MLA with the up-projection absorbed into the query and the output (DeepSeek-V3 inference)."""

    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.n_heads = num_heads
        self.kv_lora_rank = kv_rank
        self.qk_nope_head_dim = d_nope
        self.qk_rope_head_dim = d_rope
        self.qk_head_dim = d_nope + d_rope
        self.v_head_dim = d_v
        self.rope_base = rope_base
        self.W_q = nn.Linear(d_model, num_heads * self.qk_head_dim, bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)
        self.softmax_scale = 1.0 / math.sqrt(self.qk_head_dim)

    def forward(self, x: torch.Tensor, cache=None):
        bsz, seqlen, _ = x.size()
        start_pos = cache[0].size(1) if cache is not None else 0
        end_pos = start_pos + seqlen

        q = self.W_q(x).view(bsz, seqlen, self.n_heads, self.qk_head_dim)
        q_nope, q_pe = torch.split(q, [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
        positions = torch.arange(start_pos, end_pos, device=x.device)
        freqs_cis = precompute_freqs_cis(self.qk_rope_head_dim, positions, self.rope_base)
        q_pe = apply_rotary_emb(q_pe, freqs_cis.unsqueeze(1))

        kv, k_pe = torch.split(self.W_kv_a(x), [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        k_pe = apply_rotary_emb(k_pe, freqs_cis)
        kv = self.kv_norm(kv)
        if cache is not None:
            kv = torch.cat([cache[0], kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)

        wkv_b = self.W_kv_b.weight.view(self.n_heads, -1, self.kv_lora_rank)
        q_nope = torch.einsum("bshd,hdc->bshc", q_nope, wkv_b[:, :self.qk_nope_head_dim])
        scores = (torch.einsum("bshc,btc->bsht", q_nope, kv)
                  + torch.einsum("bshr,btr->bsht", q_pe, k_pe)) * self.softmax_scale

        q_idx = torch.arange(start_pos, end_pos, device=x.device)
        k_idx = torch.arange(end_pos, device=x.device)
        future = k_idx[None, :] > q_idx[:, None]
        scores = scores.masked_fill(future[:, None, :], torch.finfo(scores.dtype).min)
        scores = scores.softmax(dim=-1)

        o = torch.einsum("bsht,btc->bshc", scores, kv)
        o = torch.einsum("bshc,hdc->bshd", o, wkv_b[:, -self.v_head_dim:])
        return self.W_o(o.flatten(2)), (kv, k_pe)
