import math

import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        in_dtype = x.dtype
        h = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
        h = h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return (h * self.weight.to(h.dtype)).to(in_dtype)


def rotate_half(t):
    a, b = t.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


def rope_tables(past, n, dim, base, like):
    work = torch.float64 if like.dtype == torch.float64 else torch.float32
    inv = base ** (-torch.arange(0, dim, 2, dtype=work, device=like.device) / dim)
    pos = torch.arange(past, past + n, dtype=work, device=like.device)
    ang = pos[:, None] * inv[None, :]
    ang = torch.cat([ang, ang], dim=-1)
    return ang.cos().to(like.dtype), ang.sin().to(like.dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.num_heads = num_heads
        self.kv_rank = kv_rank
        self.d_nope, self.d_rope, self.d_v = d_nope, d_rope, d_v
        self.rope_base = rope_base
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H = self.num_heads
        dqk = self.d_nope + self.d_rope
        past = 0 if cache is None else cache[0].shape[1]

        q = self.W_q(x).view(B, T, H, dqk).transpose(1, 2)
        q_nope = q[..., : self.d_nope]
        q_pe = q[..., self.d_nope:]
        cos, sin = rope_tables(past, T, self.d_rope, self.rope_base, x)
        q_pe = q_pe * cos + rotate_half(q_pe) * sin

        kv_a = self.W_kv_a(x)
        c_kv = self.kv_norm(kv_a[..., : self.kv_rank])
        k_pe = kv_a[..., self.kv_rank:]
        k_pe = k_pe * cos + rotate_half(k_pe) * sin
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        S = c_kv.shape[1]

        kv = self.W_kv_b(c_kv).view(B, S, H, self.d_nope + self.d_v).transpose(1, 2)
        k_nope, v = kv.split([self.d_nope, self.d_v], dim=-1)
        k = torch.cat([k_nope, k_pe[:, None].expand(B, H, S, self.d_rope)], dim=-1)

        qf = torch.cat([q_nope, q_pe], dim=-1).reshape(B * H, T, dqk)
        kf = k.reshape(B * H, S, dqk)
        vf = v.reshape(B * H, S, self.d_v)

        scores = torch.bmm(qf, kf.transpose(1, 2)) / math.sqrt(dqk)
        qi = torch.arange(T, device=x.device)[:, None] + past
        kj = torch.arange(S, device=x.device)[None, :]
        scores = torch.where(kj <= qi, scores, torch.full_like(scores, float("-inf")))
        probs = torch.softmax(scores, dim=-1)

        o = torch.bmm(probs, vf).view(B, H, T, self.d_v).transpose(1, 2).reshape(B, T, H * self.d_v)
        return self.W_o(o), (c_kv, k_pe)
