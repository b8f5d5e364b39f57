import math

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        rms = torch.sqrt(torch.mean(x ** 2, dim=-1, keepdim=True) + self.eps)
        return self.weight * (x / rms)


def rope(x, pos, base):
    # x (..., T, d), pos (T,): rotate (x[i], x[i + d/2]) by pos * base^(-2i/d)
    d = x.shape[-1]
    half = d // 2
    idx = torch.arange(half, device=x.device, dtype=x.dtype)
    theta = pos.to(x.dtype)[:, None] * base ** (-2.0 * idx / d)
    c, s = torch.cos(theta), torch.sin(theta)
    a, b = x[..., :half], x[..., half:]
    return torch.cat([a * c - b * s, b * c + a * s], dim=-1)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, kv_rank, d_nope, d_rope, d_v, rope_base=10000.0):
        super().__init__()
        self.H = num_heads
        self.kv_rank = kv_rank
        self.dn, self.dr, self.dv = d_nope, d_rope, d_v
        self.rope_base = rope_base
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H, dn, dr, dv = self.H, self.dn, self.dr, self.dv
        P = 0 if cache is None else cache[0].shape[1]
        pos = torch.arange(P, P + T, device=x.device)

        q = self.W_q(x)
        lat = self.W_kv_a(x)
        c_new = self.kv_norm(lat[..., :self.kv_rank])
        kpe_new = rope(lat[..., self.kv_rank:], pos, self.rope_base)
        c_all = c_new if cache is None else torch.cat((cache[0], c_new), 1)
        kpe_all = kpe_new if cache is None else torch.cat((cache[1], kpe_new), 1)
        S = c_all.shape[1]

        allowed = torch.ones(T, S, dtype=torch.bool, device=x.device).tril(diagonal=S - T)
        kvb = self.W_kv_b(c_all)
        w, u = dn + dr, dn + dv
        heads = []
        for h in range(H):
            qh = q[..., h * w:(h + 1) * w]
            qn, qr = qh[..., :dn], rope(qh[..., dn:], pos, self.rope_base)
            kn = kvb[..., h * u:h * u + dn]
            vh = kvb[..., h * u + dn:(h + 1) * u]
            s = (qn @ kn.transpose(1, 2) + qr @ kpe_all.transpose(1, 2)) / math.sqrt(w)
            s = s.masked_fill(~allowed, float("-inf"))
            s = s - s.amax(dim=-1, keepdim=True)
            e = s.exp()
            p = e / e.sum(dim=-1, keepdim=True)
            heads.append(p @ vh)
        return self.W_o(torch.cat(heads, dim=-1)), (c_all, kpe_all)
