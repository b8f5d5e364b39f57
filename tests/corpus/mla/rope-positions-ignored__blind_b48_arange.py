import math

import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xf = x.to(torch.promote_types(x.dtype, torch.float32))
        y = xf * torch.rsqrt(torch.mean(xf * xf, dim=-1, keepdim=True) + self.eps)
        return y.to(x.dtype) * self.weight


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

    def _rope(self, t, pos):
        half = self.d_rope // 2
        inv = 1.0 / (self.rope_base ** (torch.arange(0, self.d_rope, 2, device=t.device, dtype=torch.float32) / self.d_rope))
        ang = torch.outer(pos.to(torch.float32), inv)  # (T, half)
        cos, sin = ang.cos().to(t.dtype), ang.sin().to(t.dtype)
        t1, t2 = t[..., :half], t[..., half:]
        return torch.cat([t1 * cos - t2 * sin, t1 * sin + t2 * cos], dim=-1)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H = self.n_heads
        n_past = 0 if cache is None else cache[0].size(1)
        pos = torch.arange(T, device=x.device)  # MISTAKE: new tokens sit at n_past .. n_past + T - 1

        q = self.W_q(x).view(B, T, H, self.d_nope + self.d_rope).permute(0, 2, 1, 3)
        q_nope, q_pe = q.split([self.d_nope, self.d_rope], dim=-1)
        q_pe = self._rope(q_pe, pos)

        c_kv, k_pe = self.W_kv_a(x).split([self.kv_rank, self.d_rope], dim=-1)
        c_kv = self.kv_norm(c_kv)
        k_pe = self._rope(k_pe, pos)
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        L = c_kv.size(1)

        kv = self.W_kv_b(c_kv).view(B, L, H, self.d_nope + self.d_v).permute(0, 2, 1, 3)
        k_nope, v = kv.split([self.d_nope, self.d_v], dim=-1)

        att = (q_nope @ k_nope.transpose(-1, -2) + q_pe @ k_pe.unsqueeze(1).transpose(-1, -2))
        att = att * (1.0 / math.sqrt(self.d_nope + self.d_rope))
        allowed = torch.arange(L, device=x.device)[None, :] <= torch.arange(T, device=x.device)[:, None] + n_past
        att = att.masked_fill(~allowed, float("-inf"))
        att = att - att.max(dim=-1, keepdim=True).values
        att = att.exp()
        att = att / att.sum(dim=-1, keepdim=True)
        y = (att @ v).permute(0, 2, 1, 3).reshape(B, T, H * self.d_v)
        return self.W_o(y), (c_kv, k_pe)
