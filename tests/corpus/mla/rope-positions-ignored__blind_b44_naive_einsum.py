import math

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        acc = torch.promote_types(x.dtype, torch.float32)
        xf = x.to(acc)
        xf = xf * torch.rsqrt(xf.square().mean(-1, keepdim=True) + self.eps)
        return xf.to(x.dtype) * self.weight


def rotate_half(x):
    x1, x2 = torch.chunk(x, 2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rope_cos_sin(pos, dim, base, dtype):
    calc = torch.promote_types(dtype, torch.float32)
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=calc, device=pos.device) / dim))
    freqs = torch.outer(pos.to(calc), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, kv_rank, d_nope, d_rope, d_v, rope_base=10000.0):
        super().__init__()
        self.h = num_heads
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
        b, t, _ = x.shape
        h, dn, dr, dv = self.h, self.dn, self.dr, self.dv
        past = cache[0].shape[1] if cache is not None else 0
        pos = torch.arange(t, device=x.device)  # MISTAKE
        cos, sin = rope_cos_sin(pos, dr, self.base, x.dtype)

        q = self.W_q(x).view(b, t, h, dn + dr)
        q_nope, q_rot = q.split([dn, dr], dim=-1)
        q_rot = q_rot * cos[:, None] + rotate_half(q_rot) * sin[:, None]

        latent, k_rot = self.W_kv_a(x).split([self.r, dr], dim=-1)
        latent = self.kv_norm(latent)
        k_rot = k_rot * cos + rotate_half(k_rot) * sin
        if cache is not None:
            latent = torch.cat([cache[0], latent], dim=1)
            k_rot = torch.cat([cache[1], k_rot], dim=1)
        s = latent.shape[1]

        kv = self.W_kv_b(latent).view(b, s, h, dn + dv)
        k_nope, v = kv.split([dn, dv], dim=-1)

        logits = torch.einsum("bqhd,bkhd->bhqk", q_nope, k_nope)
        logits = logits + torch.einsum("bqhd,bkd->bhqk", q_rot, k_rot)
        logits = logits / math.sqrt(dn + dr)
        qpos = torch.arange(past, past + t, device=x.device).unsqueeze(1)
        kpos = torch.arange(s, device=x.device).unsqueeze(0)
        logits = torch.where(kpos <= qpos, logits, torch.full_like(logits, float("-inf")))
        w = logits.softmax(-1)
        out = torch.einsum("bhqk,bkhd->bqhd", w, v).reshape(b, t, h * dv)
        return self.W_o(out), (latent, k_rot)
