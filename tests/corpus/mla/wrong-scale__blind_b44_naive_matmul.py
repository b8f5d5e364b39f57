import math

import torch
from torch import nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return x / rms * self.weight


def apply_rope(x, positions, base):
    d = x.size(-1)
    work = torch.promote_types(x.dtype, torch.float32)
    inv_freq = base ** (-torch.arange(0, d, 2, device=x.device, dtype=work) / d)
    theta = positions.to(work)[:, None] * inv_freq
    cos = theta.cos().to(x.dtype)
    sin = theta.sin().to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
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
        past_len = 0 if cache is None else cache[0].shape[1]
        positions = torch.arange(past_len, past_len + T, device=x.device)

        q = self.W_q(x).reshape(B, T, H, self.d_nope + self.d_rope).permute(0, 2, 1, 3)
        q_nope = q[..., : self.d_nope]
        q_pe = apply_rope(q[..., self.d_nope:], positions, self.rope_base)

        compressed = self.W_kv_a(x)
        c_kv = self.kv_norm(compressed[..., : self.kv_rank])
        k_pe = apply_rope(compressed[..., self.kv_rank:], positions, self.rope_base)
        if cache is not None:
            prev_c, prev_pe = cache
            c_kv = torch.cat((prev_c, c_kv), dim=1)
            k_pe = torch.cat((prev_pe, k_pe), dim=1)
        S = c_kv.shape[1]

        kv = self.W_kv_b(c_kv).reshape(B, S, H, self.d_nope + self.d_v).permute(0, 2, 1, 3)
        k_nope = kv[..., : self.d_nope]
        v = kv[..., self.d_nope:]

        scale = 1.0 / math.sqrt(self.d_nope)  # MISTAKE
        attn = torch.matmul(q_nope, k_nope.transpose(-1, -2))
        attn = attn + torch.matmul(q_pe, k_pe.unsqueeze(1).transpose(-1, -2))
        attn = attn * scale
        future = torch.triu(torch.ones(T, S, dtype=torch.bool, device=x.device), diagonal=past_len + 1)
        attn = attn.masked_fill(future, float("-inf"))
        attn = F.softmax(attn, dim=-1)
        out = torch.matmul(attn, v).permute(0, 2, 1, 3).reshape(B, T, H * self.d_v)
        return self.W_o(out), (c_kv, k_pe)
