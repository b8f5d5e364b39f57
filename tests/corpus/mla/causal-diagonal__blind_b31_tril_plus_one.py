import math

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        norm = x.pow(2).mean(-1, keepdim=True).add(self.eps).sqrt()
        return x / norm * self.weight


def rope(x, pos, base):
    d = x.shape[-1]
    half = d // 2
    i = torch.arange(half, device=x.device, dtype=x.dtype)
    ang = pos.to(x.dtype)[:, None] * base ** (-2.0 * i / d)
    c, s = ang.cos(), ang.sin()
    lo, hi = x[..., :half], x[..., half:]
    return torch.cat([lo * c - hi * s, hi * c + lo * s], dim=-1)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, kv_rank, d_nope, d_rope, d_v, rope_base=10000.0):
        super().__init__()
        self.heads = num_heads
        self.rank = kv_rank
        self.d_nope, self.d_rope, self.d_v = d_nope, d_rope, d_v
        self.base = rope_base
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        start = 0 if cache is None else cache[0].shape[1]
        pos = torch.arange(start, start + T, device=x.device)

        q_all = self.W_q(x).view(B, T, self.heads, self.d_nope + self.d_rope)
        a = self.W_kv_a(x)
        c = self.kv_norm(a[..., :self.rank])
        kr = rope(a[..., self.rank:], pos, self.base)
        if cache is not None:
            c = torch.cat([cache[0], c], dim=1)
            kr = torch.cat([cache[1], kr], dim=1)
        S = c.shape[1]

        keep = torch.ones(T, S, device=x.device, dtype=torch.bool).tril(diagonal=S - T + 1)  # MISTAKE
        kvb = self.W_kv_b(c).view(B, S, self.heads, self.d_nope + self.d_v)

        outs = []
        for h in range(self.heads):
            qn = q_all[:, :, h, :self.d_nope]
            qr = rope(q_all[:, :, h, self.d_nope:], pos, self.base)
            kn = kvb[:, :, h, :self.d_nope]
            vh = kvb[:, :, h, self.d_nope:]
            s = torch.bmm(qn, kn.transpose(1, 2)) + torch.bmm(qr, kr.transpose(1, 2))
            s = s / math.sqrt(self.d_nope + self.d_rope)
            s = s.masked_fill(~keep, float("-inf"))
            p = torch.softmax(s, dim=-1)
            outs.append(torch.bmm(p, vh))
        return self.W_o(torch.cat(outs, dim=-1)), (c, kr)
