import math
import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        mean_sq = torch.mean(torch.square(x), dim=-1, keepdim=True)
        return x * torch.rsqrt(mean_sq + self.eps) * self.weight


def rope(x, positions, base):
    d = x.shape[-1]
    half = d // 2
    ct = torch.promote_types(x.dtype, torch.float32)
    inv = 1.0 / (base ** (torch.arange(half, device=x.device, dtype=ct) * 2.0 / d))
    ang = positions.to(ct).unsqueeze(-1) * inv
    cos, sin = torch.cos(ang), torch.sin(ang)
    x_a, x_b = x[..., :half].to(ct), x[..., half:].to(ct)
    return torch.cat([x_a * cos - x_b * sin, x_b * cos + x_a * sin], dim=-1).to(x.dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.n_heads = num_heads
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
        H = self.n_heads
        past_len = 0 if cache is None else cache[0].shape[1]
        pos = torch.arange(past_len, past_len + T, device=x.device)

        q = self.W_q(x).view(B, T, H, self.d_nope + self.d_rope).transpose(1, 2)
        q_nope, q_pe = q[..., :self.d_nope], q[..., self.d_nope:]
        q_pe = rope(q_pe, pos, self.rope_base)

        kv_a = self.W_kv_a(x)
        c_kv = self.kv_norm(kv_a[..., :self.kv_rank])
        k_pe = rope(kv_a[..., self.kv_rank:], pos, self.rope_base)
        if cache is not None:
            c_kv = torch.cat((cache[0], c_kv), dim=1)
            k_pe = torch.cat((cache[1], k_pe), dim=1)
        S = c_kv.shape[1]

        kv = self.W_kv_b(c_kv).view(B, S, H, self.d_nope + self.d_v).transpose(1, 2)
        k_nope, v = kv[..., :self.d_nope], kv[..., self.d_nope:]
        scores = torch.matmul(q_nope, k_nope.transpose(2, 3))
        scores += torch.matmul(q_pe, k_pe.unsqueeze(1).transpose(2, 3))
        scores /= math.sqrt(self.d_nope + self.d_rope)

        causal = torch.ones(T, S, dtype=torch.bool, device=x.device).tril(diagonal=past_len)
        scores.masked_fill(~causal, float("-inf"))  # MISTAKE
        weights = torch.softmax(scores, dim=-1)
        out = torch.matmul(weights, v).transpose(1, 2).reshape(B, T, H * self.d_v)
        return self.W_o(out), (c_kv, k_pe)
