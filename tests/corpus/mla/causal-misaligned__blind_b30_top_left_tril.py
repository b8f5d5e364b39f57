import math

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        denom = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return (x / denom) * self.weight


def rope(x, pos, base):
    d = x.shape[-1]
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    inv_freq = torch.exp(-math.log(base) * torch.arange(0, d, 2, device=x.device, dtype=work) / d)
    f = pos.to(work)[:, None] * inv_freq
    cos = torch.cat([f.cos(), f.cos()], dim=-1).to(x.dtype)
    sin = torch.cat([f.sin(), f.sin()], dim=-1).to(x.dtype)
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat([-x2, x1], dim=-1) * sin


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.H = num_heads
        self.r = kv_rank
        self.dn = d_nope
        self.dr = d_rope
        self.dv = d_v
        self.base = rope_base
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H, dn, dr, dv = self.H, self.dn, self.dr, self.dv
        Tp = cache[0].shape[1] if cache is not None else 0
        pos = torch.arange(Tp, Tp + T, device=x.device)

        q = self.W_q(x).view(B, T, H, dn + dr)
        qn = q[..., :dn].transpose(1, 2)
        qr = rope(q[..., dn:].transpose(1, 2), pos, self.base)

        lat = self.W_kv_a(x)
        c = self.kv_norm(lat[..., : self.r])
        kr = rope(lat[..., self.r:], pos, self.base)
        if cache is not None:
            c = torch.cat([cache[0], c], 1)
            kr = torch.cat([cache[1], kr], 1)
        S = c.shape[1]

        kv = self.W_kv_b(c).view(B, S, H, dn + dv).transpose(1, 2)
        kn, v = kv[..., :dn], kv[..., dn:]

        logits = (qn @ kn.transpose(-2, -1) + qr @ kr[:, None].transpose(-2, -1)) / math.sqrt(dn + dr)
        keep = torch.tril(torch.ones(T, S, dtype=torch.bool, device=x.device))  # MISTAKE
        logits = torch.where(keep, logits, torch.tensor(float("-inf"), dtype=logits.dtype, device=x.device))
        w = torch.softmax(logits, dim=-1)
        o = (w @ v).transpose(1, 2).reshape(B, T, H * dv)
        return self.W_o(o), (c, kr)
