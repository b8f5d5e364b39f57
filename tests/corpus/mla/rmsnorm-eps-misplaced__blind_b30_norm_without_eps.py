import math

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        rms = x.norm(dim=-1, keepdim=True) / math.sqrt(x.shape[-1])  # MISTAKE
        return self.weight * (x / rms)


def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    i = torch.arange(d // 2, device=x.device, dtype=work)
    theta = positions.to(work)[:, None] * torch.pow(base, -2.0 * i / d)[None, :]
    c = theta.cos().to(x.dtype)
    s = theta.sin().to(x.dtype)
    lo, hi = x[..., : d // 2], x[..., d // 2:]
    return torch.cat([lo * c - hi * s, hi * c + lo * s], dim=-1)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.n_head = num_heads
        self.kv_rank = kv_rank
        self.d_nope = d_nope
        self.d_rope = d_rope
        self.d_v = d_v
        self.rope_base = rope_base
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H = self.n_head
        n_past = 0 if cache is None else cache[0].shape[1]
        pos = torch.arange(n_past, n_past + T, device=x.device)

        q = self.W_q(x).view(B, T, H, self.d_nope + self.d_rope)
        q_nope = q[..., : self.d_nope].permute(0, 2, 1, 3)
        q_pe = apply_rope(q[..., self.d_nope:].permute(0, 2, 1, 3), pos, self.rope_base)

        a = self.W_kv_a(x)
        c_kv = self.kv_norm(a[..., : self.kv_rank])
        k_pe = apply_rope(a[..., self.kv_rank:], pos, self.rope_base)
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        S = c_kv.shape[1]

        kv = self.W_kv_b(c_kv).view(B, S, H, self.d_nope + self.d_v).permute(0, 2, 1, 3)
        k_nope = kv[..., : self.d_nope]
        v = kv[..., self.d_nope:]

        scores = torch.matmul(q_nope, k_nope.transpose(-1, -2))
        scores += torch.matmul(q_pe, k_pe.unsqueeze(1).transpose(-1, -2))
        scores = scores / math.sqrt(self.d_nope + self.d_rope)
        neg = torch.zeros(T, S, dtype=scores.dtype, device=x.device)
        neg = neg.masked_fill(torch.ones(T, S, dtype=torch.bool, device=x.device).triu(n_past + 1), float("-inf"))
        probs = torch.softmax(scores + neg, dim=-1)
        out = torch.matmul(probs, v).permute(0, 2, 1, 3).reshape(B, T, H * self.d_v)
        return self.W_o(out), (c_kv, k_pe)
