import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        ms = torch.mean(x * x, dim=-1, keepdim=True)
        return self.weight * x * torch.rsqrt(ms + self.eps)


def apply_rope(x, positions, base):
    d = x.shape[-1]
    dt = torch.promote_types(x.dtype, torch.float32)
    inv = 1.0 / (base ** (torch.arange(0, d, 2, device=x.device, dtype=dt) / d))
    t = positions.to(dt)[:, None] * inv
    cos = torch.cat([t.cos(), t.cos()], dim=-1).to(x.dtype)
    sin = torch.cat([t.sin(), t.sin()], dim=-1).to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    rotated = torch.cat([-x2, x1], dim=-1)
    return x * cos + rotated * sin


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.num_heads = num_heads
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
        B, T, _ = x.size()
        H = self.num_heads
        dn, dr, dv = self.d_nope, self.d_rope, self.d_v
        T_past = 0 if cache is None else cache[0].size(1)
        positions = torch.arange(T_past, T_past + T, device=x.device)

        q = self.W_q(x).view(B, T, H, dn + dr).transpose(1, 2)
        q_nope, q_pe = q.split([dn, dr], dim=-1)
        q_nope = apply_rope(q_nope, positions, self.rope_base)  # MISTAKE

        c_kv, k_pe = self.W_kv_a(x).split([self.kv_rank, dr], dim=-1)
        c_kv = self.kv_norm(c_kv)
        k_pe = apply_rope(k_pe, positions, self.rope_base)
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        T_all = c_kv.size(1)

        k_nope, v = self.W_kv_b(c_kv).view(B, T_all, H, dn + dv).transpose(1, 2).split([dn, dv], dim=-1)

        scores = torch.matmul(q_nope, k_nope.transpose(-2, -1))
        scores = scores + torch.matmul(q_pe, k_pe.transpose(-2, -1).unsqueeze(1))
        scores = scores / math.sqrt(dn + dr)
        i = torch.arange(T, device=x.device)[:, None] + T_past
        j = torch.arange(T_all, device=x.device)[None, :]
        scores = scores.masked_fill(j > i, float("-inf"))
        attn = F.softmax(scores, dim=-1)
        out = torch.matmul(attn, v).transpose(1, 2).reshape(B, T, H * dv)
        return self.W_o(out), (c_kv, k_pe)
