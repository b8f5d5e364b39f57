import math

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        mean_sq = torch.mean(x ** 2, dim=-1, keepdim=True)
        return x * torch.rsqrt(mean_sq + self.eps) * self.weight


def rope(x, positions, base):
    """Half-split rotary embedding over the last dim of x (..., T, d)."""
    d = x.shape[-1]
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    freqs = base ** (-torch.arange(0, d, 2, device=x.device, dtype=work) / d)
    ang = positions.to(work)[:, None] * freqs[None]
    cos = torch.cat([ang.cos()] * 2, dim=-1).to(x.dtype)
    sin = torch.cat([ang.sin()] * 2, dim=-1).to(x.dtype)
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat([-x2, x1], dim=-1) * sin


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.nh = num_heads
        self.rank = kv_rank
        self.d_nope = d_nope
        self.d_rope = d_rope
        self.d_v = d_v
        self.base = rope_base
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        nh = self.nh
        dqk = self.d_nope + self.d_rope
        start = cache[0].size(1) if cache is not None else 0
        positions = torch.arange(start, start + T, device=x.device)

        q = self.W_q(x).view(B, T, nh, dqk).transpose(1, 2)
        q = rope(q, positions, self.base)  # MISTAKE
        q_nope, q_pe = q.split([self.d_nope, self.d_rope], dim=-1)

        c, kr = self.W_kv_a(x).split([self.rank, self.d_rope], dim=-1)
        c = self.kv_norm(c)
        kr = rope(kr, positions, self.base)
        if cache is not None:
            c = torch.cat((cache[0], c), dim=1)
            kr = torch.cat((cache[1], kr), dim=1)
        S = c.size(1)

        kv = self.W_kv_b(c).view(B, S, nh, self.d_nope + self.d_v).transpose(1, 2)
        k_nope, v = kv.split([self.d_nope, self.d_v], dim=-1)

        # flatten batch and heads
        qn = q_nope.reshape(B * nh, T, self.d_nope)
        qr = q_pe.reshape(B * nh, T, self.d_rope)
        kn = k_nope.reshape(B * nh, S, self.d_nope)
        krh = kr.unsqueeze(1).expand(B, nh, S, self.d_rope).reshape(B * nh, S, self.d_rope)
        logits = torch.baddbmm(torch.bmm(qr, krh.transpose(1, 2)), qn, kn.transpose(1, 2))
        logits = logits * (1.0 / math.sqrt(dqk))

        mask = torch.arange(S, device=x.device)[None, :] > torch.arange(T, device=x.device)[:, None] + start
        logits = logits.masked_fill(mask, float("-inf"))
        probs = logits.softmax(dim=-1)
        out = torch.bmm(probs, v.reshape(B * nh, S, self.d_v))
        out = out.view(B, nh, T, self.d_v).permute(0, 2, 1, 3).reshape(B, T, nh * self.d_v)
        return self.W_o(out), (c, kr)
