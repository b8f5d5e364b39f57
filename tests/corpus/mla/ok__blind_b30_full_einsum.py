import math

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        inv = torch.rsqrt(torch.einsum("...i,...i->...", x, x)[..., None] / x.shape[-1] + self.eps)
        return torch.einsum("...i,i->...i", x * inv, self.weight)


def rope(x, pos, base):
    d = x.shape[-1]
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    inv_freq = 1.0 / base ** (torch.arange(0, d, 2, device=x.device, dtype=work) / d)
    ang = torch.einsum("t,f->tf", pos.to(work), inv_freq)
    cos = torch.cat([ang.cos(), ang.cos()], -1).to(x.dtype)
    sin = torch.cat([ang.sin(), ang.sin()], -1).to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return x * cos + torch.cat([-x2, x1], -1) * sin


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.H, self.r, self.dn, self.dr, self.dv = num_heads, kv_rank, d_nope, d_rope, d_v
        self.base = rope_base
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H, r, dn, dr, dv = self.H, self.r, self.dn, self.dr, self.dv
        t0 = 0 if cache is None else cache[0].shape[1]
        pos = torch.arange(t0, t0 + T, device=x.device)

        q = torch.einsum("btd,od->bto", x, self.W_q.weight).unflatten(-1, (H, dn + dr))
        q_nope, q_pe = q[..., :dn], q[..., dn:]
        q_pe = rope(q_pe.transpose(1, 2), pos, self.base).transpose(1, 2)   # b t h dr

        a = torch.einsum("btd,od->bto", x, self.W_kv_a.weight)
        c_kv = self.kv_norm(a[..., :r])
        k_pe = rope(a[..., r:], pos, self.base)
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], 1)
            k_pe = torch.cat([cache[1], k_pe], 1)
        S = c_kv.shape[1]

        kv = torch.einsum("bsr,or->bso", c_kv, self.W_kv_b.weight).unflatten(-1, (H, dn + dv))
        k_nope, v = kv[..., :dn], kv[..., dn:]

        scores = torch.einsum("bthd,bshd->bhts", q_nope, k_nope) + torch.einsum("bthd,bsd->bhts", q_pe, k_pe)
        scores = scores / math.sqrt(dn + dr)
        i = torch.arange(T, device=x.device) + (S - T)
        j = torch.arange(S, device=x.device)
        visible = j[None, :] <= i[:, None]
        scores = scores.masked_fill(~visible, float("-inf"))
        w = scores.softmax(-1)
        o = torch.einsum("bhts,bshd->bthd", w, v).flatten(2)
        out = torch.einsum("bti,oi->bto", o, self.W_o.weight)
        return out, (c_kv, k_pe)
