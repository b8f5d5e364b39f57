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
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rope_cos_sin(positions, dim, base, dtype, device):
    work = torch.promote_types(dtype, torch.float32)
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, device=device, dtype=work) / dim))
    freqs = positions.to(work)[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def apply_rotary_pos_emb(x, cos, sin):
    return x * cos + rotate_half(x) * sin


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
        past = 0 if cache is None else cache[0].size(1)
        positions = torch.arange(past, past + T, device=x.device)
        cos, sin = rope_cos_sin(positions, self.d_rope, self.rope_base, x.dtype, x.device)

        q = self.W_q(x).view(B, T, H, self.d_nope + self.d_rope).transpose(1, 2)
        q_nope, q_pe = q.split([self.d_nope, self.d_rope], dim=-1)
        q_pe = apply_rotary_pos_emb(q_pe, cos, sin)

        compressed = self.W_kv_a(x)
        c_kv, k_pe = compressed.split([self.kv_rank, self.d_rope], dim=-1)
        c_kv = self.kv_norm(c_kv)
        k_pe = apply_rotary_pos_emb(k_pe, cos, sin)
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        S = c_kv.size(1)

        kv = self.W_kv_b(c_kv).view(B, S, H, self.d_nope + self.d_v).transpose(1, 2)
        k_nope, v = kv.split([self.d_nope, self.d_v], dim=-1)
        k = torch.cat([k_nope, k_pe.unsqueeze(1).expand(B, H, S, self.d_rope)], dim=-1)
        q_full = torch.cat([q_nope, q_pe], dim=-1)

        attn = torch.matmul(q_full, k.transpose(-2, -1)) / math.sqrt(self.d_nope + self.d_rope)
        keep = torch.ones(T, S, dtype=torch.bool, device=x.device).tril(diagonal=S - T)
        attn = attn.masked_fill(~keep, float("-inf"))
        attn = F.softmax(attn, dim=-1)
        out = torch.matmul(attn, v).transpose(1, 2).reshape(B, T, H * self.d_v)
        return self.W_o(out), (c_kv, k_pe)
