import math

import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xf = x.to(torch.promote_types(x.dtype, torch.float32))
        out = xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return out.to(x.dtype) * self.weight


def rope(x, positions, base):
    d = x.shape[-1]
    half = d // 2
    dt = torch.promote_types(x.dtype, torch.float32)
    inv_freq = 1.0 / base ** (torch.arange(half, device=x.device, dtype=dt) * 2 / d)
    theta = positions.to(dt)[:, None] * inv_freq[None, :]
    cos, sin = theta.cos().to(x.dtype), theta.sin().to(x.dtype)
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class MultiHeadLatentAttention(nn.Module):
    """Absorbed form: W_kv_b's key block folded into the query, its value block into the output."""

    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.H = num_heads
        self.r = kv_rank
        self.dn, self.dr, self.dv = d_nope, d_rope, d_v
        self.base = rope_base
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H, r, dn, dr, dv = self.H, self.r, self.dn, self.dr, self.dv
        past = 0 if cache is None else cache[0].shape[1]
        positions = torch.arange(past, past + T, device=x.device)

        q = self.W_q(x).view(B, T, H, dn + dr)
        q_nope, q_pe = q[..., :dn], q[..., dn:]
        q_pe = rope(q_pe.transpose(1, 2), positions, self.base).transpose(1, 2)  # (B, T, H, dr)

        a = self.W_kv_a(x)
        c_kv = self.kv_norm(a[..., :r])
        k_pe = rope(a[..., r:], positions, self.base)
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        Tk = c_kv.shape[1]

        w = self.W_kv_b.weight.view(H, dn + dv, r)
        w_k, w_v = w[:, :dn], w[:, dn:]  # (H, dn, r), (H, dv, r)
        q_lat = torch.einsum("bthn,hnr->bthr", q_nope, w_k)  # the query seen from the latent
        scores = torch.einsum("bthr,bsr->bhts", q_lat, c_kv) + torch.einsum("bthp,bsp->bhts", q_pe, k_pe)
        scores = scores / math.sqrt(dn + dr)
        offset = Tk - T
        qi = torch.arange(T, device=x.device)[:, None] + offset
        kj = torch.arange(Tk, device=x.device)[None, :]
        scores = scores.masked_fill(kj > qi, float("-inf"))
        scores = scores - scores.amax(dim=-1, keepdim=True)
        p = scores.exp()
        p = p / p.sum(dim=-1, keepdim=True)
        ctx = torch.einsum("bhts,bsr->bthr", p, c_kv)  # weights applied to the latent
        out = torch.einsum("bthr,hvr->bthv", ctx, w_v).reshape(B, T, H * dv)
        return self.W_o(out), (c_kv, k_pe)
