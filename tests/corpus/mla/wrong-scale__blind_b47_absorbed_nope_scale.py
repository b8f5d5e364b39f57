import math

import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xf = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
        ms = xf.pow(2).mean(-1, keepdim=True)
        return (xf * torch.rsqrt(ms + self.eps)).to(x.dtype) * self.weight


def rope_btd(x, pos, base):
    """x (B, T, ..., d): half-split rotary embedding, the time axis at dim 1."""
    d = x.shape[-1]
    fdt = torch.promote_types(x.dtype, torch.float32)
    inv = 1.0 / (base ** (torch.arange(0, d, 2, device=x.device, dtype=fdt) / d))
    ang = pos.to(fdt)[:, None] * inv  # (T, d/2)
    ang = ang.view(1, ang.shape[0], *([1] * (x.dim() - 3)), d // 2)
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    a, b = x[..., : d // 2], x[..., d // 2:]
    return torch.cat((a * cos - b * sin, b * cos + a * sin), dim=-1)


class MultiHeadLatentAttention(nn.Module):
    """Absorbed form: W_kv_b's key half folded into the queries, its value half into the output."""

    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.n_heads = num_heads
        self.kv_rank = kv_rank
        self.d_nope, self.d_rope, self.d_v = d_nope, d_rope, d_v
        self.rope_base = rope_base
        self.softmax_scale = self.d_nope ** -0.5  # MISTAKE: only the nope width, the rope part left out
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def forward(self, x, cache=None):
        bsz, seqlen, _ = x.shape
        start = 0 if cache is None else cache[0].shape[1]
        pos = torch.arange(start, start + seqlen, device=x.device)

        q = self.W_q(x).view(bsz, seqlen, self.n_heads, self.d_nope + self.d_rope)
        q_nope, q_pe = torch.split(q, [self.d_nope, self.d_rope], dim=-1)
        q_pe = rope_btd(q_pe, pos, self.rope_base)

        kv = self.W_kv_a(x)
        c_kv, k_pe = torch.split(kv, [self.kv_rank, self.d_rope], dim=-1)
        c_kv = self.kv_norm(c_kv)
        k_pe = rope_btd(k_pe, pos, self.rope_base)
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        end = c_kv.shape[1]

        wkv_b = self.W_kv_b.weight.view(self.n_heads, self.d_nope + self.d_v, self.kv_rank)
        q_lat = torch.einsum("bshd,hdc->bshc", q_nope, wkv_b[:, : self.d_nope])
        scores = (torch.einsum("bshc,btc->bsht", q_lat, c_kv)
                  + torch.einsum("bshr,btr->bsht", q_pe, k_pe)) * self.softmax_scale

        future = torch.arange(end, device=x.device)[None, :] > pos[:, None]  # (seqlen, end)
        scores = scores.masked_fill(future[:, None, :], float("-inf"))
        probs = scores.softmax(dim=-1)

        o_lat = torch.einsum("bsht,btc->bshc", probs, c_kv)
        o = torch.einsum("bshc,hdc->bshd", o_lat, wkv_b[:, -self.d_v:])
        return self.W_o(o.flatten(2)), (c_kv, k_pe)
