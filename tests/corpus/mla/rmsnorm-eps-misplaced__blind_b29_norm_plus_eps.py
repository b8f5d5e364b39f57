import math
import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        rms = torch.linalg.vector_norm(x, dim=-1, keepdim=True) / math.sqrt(x.shape[-1])
        return self.weight * x / (rms + self.eps)  # MISTAKE


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.H = num_heads
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
        # x (B, T, H, d) or (B, T, d)
        d = x.shape[-1]
        ct = torch.promote_types(x.dtype, torch.float32)
        inv = 1.0 / self.rope_base ** (torch.arange(0, d, 2, device=x.device, dtype=ct) / d)
        ang = pos.to(ct)[:, None] * inv
        if x.dim() == 4:
            ang = ang[:, None]
        cos, sin = ang.cos(), ang.sin()
        x1, x2 = x[..., : d // 2].to(ct), x[..., d // 2:].to(ct)
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1).to(x.dtype)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H = self.H
        T0 = 0 if cache is None else cache[0].shape[1]
        pos = torch.arange(T0, T0 + T, device=x.device)

        q = self.W_q(x).reshape(B, T, H, self.d_nope + self.d_rope)
        q_nope = q[..., :self.d_nope]
        q_pe = self._rope(q[..., self.d_nope:], pos)

        kv = self.W_kv_a(x)
        c_kv = self.kv_norm(kv[..., :self.kv_rank])
        k_pe = self._rope(kv[..., self.kv_rank:], pos)
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        S = c_kv.shape[1]

        kvb = self.W_kv_b(c_kv).reshape(B, S, H, self.d_nope + self.d_v)
        k_nope, v = kvb[..., :self.d_nope], kvb[..., self.d_nope:]

        heads = []
        allowed = torch.arange(S, device=x.device)[None, :] <= torch.arange(T, device=x.device)[:, None] + T0
        for h in range(H):
            sc = q_nope[:, :, h] @ k_nope[:, :, h].transpose(1, 2) + q_pe[:, :, h] @ k_pe.transpose(1, 2)
            sc = sc / math.sqrt(self.d_nope + self.d_rope)
            sc = sc.masked_fill(~allowed, float("-inf"))
            heads.append(sc.softmax(-1) @ v[:, :, h])
        out = torch.cat(heads, dim=-1)
        return self.W_o(out), (c_kv, k_pe)
