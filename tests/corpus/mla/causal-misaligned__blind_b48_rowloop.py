import math

import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        x32 = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
        rms = torch.sqrt(x32.square().mean(dim=-1, keepdim=True) + self.eps)
        return (x32 / rms).to(x.dtype) * self.weight


def rope_half(x, pos, base):
    """x (..., T, r) rotated pairwise (i, i + r/2) at positions pos (T,)."""
    r = x.shape[-1]
    h = r // 2
    freq = torch.pow(base, -torch.arange(h, device=x.device, dtype=torch.float32) * 2.0 / r)
    ang = pos.float().unsqueeze(-1) * freq  # (T, h)
    c, s = torch.cos(ang).to(x.dtype), torch.sin(ang).to(x.dtype)
    a, b = x[..., :h], x[..., h:]
    return torch.cat((a * c - b * s, b * c + a * s), dim=-1)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.h, self.rank = num_heads, kv_rank
        self.dn, self.dr, self.dv = d_nope, d_rope, d_v
        self.base = rope_base
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        start = 0 if cache is None else cache[0].shape[1]
        pos = torch.arange(start, start + T, device=x.device)

        q = self.W_q(x).reshape(B, T, self.h, self.dn + self.dr)
        q_nope, q_rot = q[..., : self.dn], q[..., self.dn :]  # (B, T, h, dn), (B, T, h, dr)
        q_rot = rope_half(q_rot.transpose(1, 2), pos, self.base)  # (B, h, T, dr)

        lat = self.W_kv_a(x)
        c_kv = self.kv_norm(lat[..., : self.rank])
        k_rot = rope_half(lat[..., self.rank :], pos, self.base)  # (B, T, dr)
        if cache is not None:
            c_kv = torch.cat((cache[0], c_kv), dim=1)
            k_rot = torch.cat((cache[1], k_rot), dim=1)
        S = c_kv.shape[1]

        kv = self.W_kv_b(c_kv).reshape(B, S, self.h, self.dn + self.dv)
        k_nope, v = kv[..., : self.dn], kv[..., self.dn :]

        scores = torch.einsum("bthn,bshn->bhts", q_nope, k_nope)
        scores = scores + torch.einsum("bhtr,bsr->bhts", q_rot, k_rot)
        scores = scores / math.sqrt(self.dn + self.dr)
        for i in range(T):
            scores[:, :, i, i + 1 :] = float("-inf")  # MISTAKE: query i sits at start + i, so this should be start + i + 1
        p = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
        p = p / p.sum(dim=-1, keepdim=True)
        out = torch.einsum("bhts,bshv->bthv", p, v).reshape(B, T, self.h * self.dv)
        return self.W_o(out), (c_kv, k_rot)
