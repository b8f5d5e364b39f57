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
        h = (x - x.mean(-1, keepdim=True)) * torch.rsqrt(x.var(-1, keepdim=True, unbiased=False) + self.eps)  # MISTAKE
        return h * self.weight


def sincos(start, length, dim, base, ref):
    ft = torch.promote_types(ref.dtype, torch.float32)
    idx = torch.arange(dim // 2, device=ref.device, dtype=ft)
    inv = torch.exp(-math.log(base) * 2.0 * idx / dim)
    pos = torch.arange(start, start + length, device=ref.device, dtype=ft)
    ang = pos[:, None] * inv[None, :]
    return ang.sin(), ang.cos()


def rope(x, sin, cos):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1).to(x.dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.n_h = num_heads
        self.r = kv_rank
        self.d_nope, self.d_rope, self.d_v = d_nope, d_rope, d_v
        self.rope_base = rope_base
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        past = 0 if cache is None else cache[0].shape[1]
        sin, cos = sincos(past, T, self.d_rope, self.rope_base, x)

        q = self.W_q(x).view(B, T, self.n_h, self.d_nope + self.d_rope).permute(0, 2, 1, 3)
        q_nope, q_pe = q[..., :self.d_nope], rope(q[..., self.d_nope:], sin, cos)

        kv_a = self.W_kv_a(x)
        c_kv = self.kv_norm(kv_a[..., :self.r])
        k_pe = rope(kv_a[..., self.r:], sin, cos)
        if cache is not None:
            c_kv, k_pe = torch.cat([cache[0], c_kv], 1), torch.cat([cache[1], k_pe], 1)
        S = c_kv.shape[1]

        kv = self.W_kv_b(c_kv).view(B, S, self.n_h, -1).permute(0, 2, 1, 3)
        k = torch.cat([kv[..., :self.d_nope], k_pe.unsqueeze(1).expand(-1, self.n_h, -1, -1)], -1)
        v = kv[..., self.d_nope:]
        qq = torch.cat([q_nope, q_pe], -1)

        s = torch.matmul(qq, k.transpose(-1, -2)) / math.sqrt(self.d_nope + self.d_rope)
        s = s.masked_fill(torch.ones(T, S, dtype=torch.bool, device=x.device).triu(S - T + 1), float("-inf"))
        a = F.softmax(s, dim=-1)
        y = torch.matmul(a, v).permute(0, 2, 1, 3).flatten(2)
        return self.W_o(y), (c_kv, k_pe)
