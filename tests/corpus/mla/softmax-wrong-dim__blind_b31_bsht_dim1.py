import math

import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + self.eps) * self.weight


def apply_rope(x, cos, sin):
    d2 = x.shape[-1] // 2
    a, b = x[..., :d2], x[..., d2:]
    return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)


class MultiHeadLatentAttention(nn.Module):
    """Absorbed MLA: attention runs in the latent space."""

    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.n_heads = num_heads
        self.kv_rank = kv_rank
        self.d_nope, self.d_rope, self.d_v = d_nope, d_rope, d_v
        self.rope_base = rope_base
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)
        self.softmax_scale = 1.0 / math.sqrt(d_nope + d_rope)

    def forward(self, x, cache=None):
        bsz, seqlen, _ = x.shape
        start_pos = cache[0].shape[1] if cache is not None else 0
        end_pos = start_pos + seqlen

        acc = torch.float64 if x.dtype == torch.float64 else torch.float32
        t = torch.arange(start_pos, end_pos, device=x.device, dtype=acc)
        inv_freq = 1.0 / (self.rope_base ** (torch.arange(0, self.d_rope, 2, device=x.device, dtype=acc) / self.d_rope))
        ang = torch.outer(t, inv_freq)
        cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)

        q = self.W_q(x).view(bsz, seqlen, self.n_heads, -1)
        q_nope, q_pe = q[..., :self.d_nope], q[..., self.d_nope:]
        q_pe = apply_rope(q_pe, cos[:, None], sin[:, None])
        a = self.W_kv_a(x)
        kv = self.kv_norm(a[..., :self.kv_rank])
        k_pe = apply_rope(a[..., self.kv_rank:], cos, sin)
        if cache is not None:
            kv = torch.cat([cache[0], kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)

        w = self.W_kv_b.weight.view(self.n_heads, self.d_nope + self.d_v, self.kv_rank)
        w_uk, w_uv = w[:, :self.d_nope], w[:, self.d_nope:]
        q_lat = torch.einsum("bshd,hdc->bshc", q_nope, w_uk)
        scores = torch.einsum("bshc,btc->bsht", q_lat, kv) + torch.einsum("bshr,btr->bsht", q_pe, k_pe)
        scores = scores * self.softmax_scale

        future = torch.ones(seqlen, end_pos, dtype=torch.bool, device=x.device).triu(start_pos + 1)
        scores = scores.masked_fill(future.unsqueeze(1), torch.finfo(scores.dtype).min)
        probs = torch.softmax(scores, dim=1)  # MISTAKE

        o_lat = torch.einsum("bsht,btc->bshc", probs, kv)
        o = torch.einsum("bshc,hvc->bshv", o_lat, w_uv)
        return self.W_o(o.reshape(bsz, seqlen, -1)), (kv, k_pe)
