import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        if x.dtype in (torch.float16, torch.bfloat16):
            return self._norm(x.float()).type_as(x) * self.weight
        return self._norm(x) * self.weight


def rotary(x, positions, base):
    # x (B, T, H, d) or (B, T, d); positions (T,)
    d = x.shape[-1]
    half = d // 2
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    inv_freq = 1.0 / base ** (torch.arange(half, device=x.device, dtype=work) * 2 / d)
    theta = torch.outer(positions.to(work), inv_freq)
    if x.dim() == 4:
        theta = theta[:, None, :]
    cos, sin = theta.cos().to(x.dtype), theta.sin().to(x.dtype)
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


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
        B, T, _ = x.shape
        H = self.num_heads
        T_past = 0 if cache is None else cache[0].shape[1]
        positions = torch.arange(T_past, T_past + T, device=x.device)

        q = self.W_q(x).view(B, T, H, self.d_nope + self.d_rope)           # B T H dqk
        q_nope, q_pe = torch.split(q, [self.d_nope, self.d_rope], dim=-1)
        q_nope = rotary(q_nope, positions, self.rope_base)  # MISTAKE

        kv_a = self.W_kv_a(x)
        c_kv, k_pe = torch.split(kv_a, [self.kv_rank, self.d_rope], dim=-1)
        c_kv = self.kv_norm(c_kv)
        k_pe = rotary(k_pe, positions, self.rope_base)
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        T_all = c_kv.shape[1]

        kv = self.W_kv_b(c_kv).view(B, T_all, H, self.d_nope + self.d_v)
        k_nope, v = torch.split(kv, [self.d_nope, self.d_v], dim=-1)

        scores = torch.einsum("bqhd,bkhd->bhqk", q_nope, k_nope)
        scores = scores + torch.einsum("bqhd,bkd->bhqk", q_pe, k_pe)
        scores = scores / math.sqrt(self.d_nope + self.d_rope)

        q_idx = torch.arange(T, device=x.device).view(T, 1) + T_past
        k_idx = torch.arange(T_all, device=x.device).view(1, T_all)
        scores = torch.where(k_idx <= q_idx, scores, float("-inf"))
        attn = F.softmax(scores, dim=-1)
        out = torch.einsum("bhqk,bkhd->bqhd", attn, v).reshape(B, T, H * self.d_v)
        return self.W_o(out), (c_kv, k_pe)
