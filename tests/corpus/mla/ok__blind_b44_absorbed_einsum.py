import math

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xf = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
        y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return y.to(x.dtype) * self.weight


def rope_tables(positions, dim, base, dtype):
    fdt = torch.float64 if dtype == torch.float64 else torch.float32
    inv_freq = 1.0 / base ** (torch.arange(0, dim, 2, device=positions.device, dtype=fdt) / dim)
    ang = positions.to(fdt)[:, None] * inv_freq
    return ang.cos().to(dtype), ang.sin().to(dtype)


def rope_apply(x, cos, sin):
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.n_heads = num_heads
        self.kv_lora_rank = kv_rank
        self.qk_nope_head_dim = d_nope
        self.qk_rope_head_dim = d_rope
        self.v_head_dim = d_v
        self.rope_base = rope_base
        self.softmax_scale = (d_nope + d_rope) ** -0.5
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def forward(self, x, cache=None):
        bsz, seqlen, _ = x.shape
        H = self.n_heads
        dn, dr, dv, rank = self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim, self.kv_lora_rank
        start = 0 if cache is None else cache[0].shape[1]
        pos = torch.arange(start, start + seqlen, device=x.device)
        cos, sin = rope_tables(pos, dr, self.rope_base, x.dtype)

        q = self.W_q(x).view(bsz, seqlen, H, dn + dr)
        q_nope, q_pe = torch.split(q, [dn, dr], dim=-1)
        q_pe = rope_apply(q_pe, cos[:, None, :], sin[:, None, :])

        kv = self.W_kv_a(x)
        kv, k_pe = torch.split(kv, [rank, dr], dim=-1)
        kv = self.kv_norm(kv)
        k_pe = rope_apply(k_pe, cos, sin)
        if cache is not None:
            kv = torch.cat([cache[0], kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        end = kv.shape[1]

        wkv_b = self.W_kv_b.weight.view(H, dn + dv, rank)
        q_nope = torch.einsum("bshd,hdc->bshc", q_nope, wkv_b[:, :dn])
        scores = (torch.einsum("bshc,btc->bsht", q_nope, kv)
                  + torch.einsum("bshr,btr->bsht", q_pe, k_pe)) * self.softmax_scale

        q_at = torch.arange(start, start + seqlen, device=x.device)
        k_at = torch.arange(end, device=x.device)
        allowed = k_at[None, :] <= q_at[:, None]
        scores = scores.masked_fill(~allowed[:, None, :], float("-inf"))
        probs = scores.softmax(dim=-1)

        o = torch.einsum("bsht,btc->bshc", probs, kv)
        o = torch.einsum("bshc,hdc->bshd", o, wkv_b[:, -dv:])
        return self.W_o(o.flatten(2)), (kv, k_pe)
