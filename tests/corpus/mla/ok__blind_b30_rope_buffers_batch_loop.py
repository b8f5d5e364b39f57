import math

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        rms = torch.sqrt(torch.mean(x * x, dim=-1, keepdim=True) + self.eps)
        return self.weight * (x / rms)


class MultiHeadLatentAttention(nn.Module):
    MAX_POSITIONS = 8192

    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.h = num_heads
        self.r = kv_rank
        self.dn = d_nope
        self.dr = d_rope
        self.dv = d_v
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)
        self.scale = 1.0 / math.sqrt(d_nope + d_rope)

        # rope tables, built once for every position we will ever need
        inv_freq = 1.0 / (rope_base ** (torch.arange(0, d_rope, 2, dtype=torch.float64) / d_rope))
        t = torch.arange(self.MAX_POSITIONS, dtype=torch.float64)
        freqs = torch.outer(t, inv_freq)
        emb = torch.cat([freqs, freqs], dim=-1)
        self.register_buffer("cos_cached", emb.cos(), persistent=False)
        self.register_buffer("sin_cached", emb.sin(), persistent=False)

    def _rope(self, x, cos, sin):
        half = x.shape[-1] // 2
        rot = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
        return x * cos + rot * sin

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        past = 0 if cache is None else cache[0].shape[1]
        positions = torch.arange(past, past + T, device=x.device)
        cos = self.cos_cached[positions].to(x.dtype)  # (T, dr)
        sin = self.sin_cached[positions].to(x.dtype)

        q = self.W_q(x).view(B, T, self.h, self.dn + self.dr).permute(0, 2, 1, 3)  # B h T dqk
        q_nope, q_rot = q[..., : self.dn], q[..., self.dn:]
        q_rot = self._rope(q_rot, cos, sin)

        compressed = self.W_kv_a(x)
        latent = self.kv_norm(compressed[..., : self.r])
        kr = self._rope(compressed[..., self.r:], cos, sin)
        if cache is not None:
            latent = torch.cat((cache[0], latent), dim=1)
            kr = torch.cat((cache[1], kr), dim=1)
        S = latent.shape[1]

        future = torch.ones(T, S, dtype=torch.bool, device=x.device).triu(past + 1)
        kv = self.W_kv_b(latent).view(B, S, self.h, self.dn + self.dv).permute(0, 2, 1, 3)

        rows = []
        for b in range(B):
            k_nope_b = kv[b, :, :, : self.dn]          # h S dn
            v_b = kv[b, :, :, self.dn:]                # h S dv
            s = q_nope[b] @ k_nope_b.transpose(-1, -2) + q_rot[b] @ kr[b].transpose(0, 1)
            s = s * self.scale
            s = s.masked_fill(future, torch.finfo(s.dtype).min)
            p = s.softmax(dim=-1)
            o = p @ v_b                                # h T dv
            rows.append(o.transpose(0, 1).reshape(T, self.h * self.dv))
        out = self.W_o(torch.stack(rows, dim=0))
        return out, (latent, kr)
