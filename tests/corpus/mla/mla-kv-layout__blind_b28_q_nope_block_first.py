import math

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        rms = torch.sqrt(torch.mean(x ** 2, dim=-1, keepdim=True) + self.eps)
        return self.weight * x / rms


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

    def _rope(self, x, pos):
        # x (B, T, d_rope), pos (T,)
        d = x.shape[-1]
        half = d // 2
        dt = x.dtype if x.dtype in (torch.float32, torch.float64) else torch.float32
        exps = torch.arange(half, device=x.device, dtype=dt) * 2.0 / d
        theta = pos.to(dt)[:, None] / (self.rope_base ** exps)[None, :]
        cos = torch.cos(theta).to(x.dtype)
        sin = torch.sin(theta).to(x.dtype)
        lo, hi = x[..., :half], x[..., half:]
        return torch.cat([lo * cos - hi * sin, hi * cos + lo * sin], dim=-1)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H, dn, dr, dv = self.num_heads, self.d_nope, self.d_rope, self.d_v
        start = 0 if cache is None else cache[0].shape[1]
        pos = torch.arange(start, start + T, device=x.device)

        q_all = self.W_q(x)                               # (B, T, H*(dn+dr))
        a = self.W_kv_a(x)
        c_new = self.kv_norm(a[:, :, :self.kv_rank])
        pe_new = self._rope(a[:, :, self.kv_rank:], pos)
        if cache is None:
            c_kv, k_pe = c_new, pe_new
        else:
            c_kv = torch.cat([cache[0], c_new], dim=1)
            k_pe = torch.cat([cache[1], pe_new], dim=1)
        S = c_kv.shape[1]
        kv_all = self.W_kv_b(c_kv)                        # (B, S, H*(dn+dv))

        row = torch.arange(T, device=x.device).unsqueeze(1) + (S - T)
        col = torch.arange(S, device=x.device).unsqueeze(0)
        hidden = col > row
        neg = torch.finfo(x.dtype).min
        scale = 1.0 / math.sqrt(dn + dr)

        heads = []
        for h in range(H):
            q_nope, q_pe = q_all[:, :, h * dn:(h + 1) * dn], q_all[:, :, H * dn + h * dr:H * dn + (h + 1) * dr]  # MISTAKE
            q_pe = self._rope(q_pe, pos)
            kvh = kv_all[:, :, h * (dn + dv):(h + 1) * (dn + dv)]
            k_nope, v = kvh[..., :dn], kvh[..., dn:]
            s = (q_nope @ k_nope.transpose(1, 2) + q_pe @ k_pe.transpose(1, 2)) * scale   # (B, T, S)
            s = s.masked_fill(hidden, neg)
            w = torch.softmax(s, dim=-1)
            heads.append(w @ v)                           # (B, T, dv)
        out = torch.cat(heads, dim=-1)
        return self.W_o(out), (c_kv, k_pe)
