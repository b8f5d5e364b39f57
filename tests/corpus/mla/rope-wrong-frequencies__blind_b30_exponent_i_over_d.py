import math

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * x * self.weight


def build_rope(positions, dim, base, dtype):
    work = torch.float64 if dtype == torch.float64 else torch.float32
    inv_freq = 1.0 / (base ** (torch.arange(0, dim // 2, device=positions.device, dtype=work) / dim))  # MISTAKE
    ang = positions.to(work)[:, None] * inv_freq[None, :]
    ang = torch.cat([ang, ang], dim=-1)
    return ang.cos().to(dtype), ang.sin().to(dtype)


def rotate(x, cos, sin):
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat([-x2, x1], dim=-1) * sin


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.h = num_heads
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
        h = self.h
        past = 0 if cache is None else cache[0].shape[1]
        cos, sin = build_rope(torch.arange(past, past + T, device=x.device), self.d_rope, self.rope_base, x.dtype)

        q = self.W_q(x).view(B, T, h, self.d_nope + self.d_rope).transpose(1, 2)
        q_nope, q_pe = q[..., : self.d_nope], rotate(q[..., self.d_nope:], cos, sin)

        kv_a = self.W_kv_a(x)
        c_kv = self.kv_norm(kv_a[..., : self.kv_rank])
        k_pe = rotate(kv_a[..., self.kv_rank:], cos, sin)
        if cache is not None:
            c_kv = torch.cat((cache[0], c_kv), dim=1)
            k_pe = torch.cat((cache[1], k_pe), dim=1)
        S = c_kv.shape[1]

        kv = self.W_kv_b(c_kv).view(B, S, h, self.d_nope + self.d_v).transpose(1, 2)
        k_nope, v = kv[..., : self.d_nope], kv[..., self.d_nope:]

        # flatten (batch, head) and use bmm
        k = torch.cat([k_nope, k_pe.unsqueeze(1).expand(B, h, S, self.d_rope)], dim=-1)
        qf = torch.cat([q_nope, q_pe], dim=-1).flatten(0, 1)
        kf = k.flatten(0, 1)
        scores = torch.bmm(qf, kf.transpose(1, 2)) / math.sqrt(self.d_nope + self.d_rope)
        visible = torch.arange(S, device=x.device)[None, :] <= torch.arange(past, past + T, device=x.device)[:, None]
        scores = scores.masked_fill(~visible, float("-inf"))
        p = scores.softmax(dim=-1)
        o = torch.bmm(p, v.flatten(0, 1)).view(B, h, T, self.d_v).transpose(1, 2).reshape(B, T, h * self.d_v)
        return self.W_o(o), (c_kv, k_pe)
