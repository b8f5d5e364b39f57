import math
import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        variance = (x * x).mean(-1, keepdim=True)
        x = x * torch.rsqrt(variance + self.eps)
        return x * self.weight


def stable_softmax(s, dim=-1):
    m = s.amax(dim=dim, keepdim=True)
    e = torch.exp(s - m)
    return e / e.sum(dim=dim, keepdim=True)


def half_split_rope(x, positions, base):
    d = x.shape[-1]
    h = d // 2
    dt = torch.promote_types(x.dtype, torch.float32)
    inv = 1.0 / (base ** (torch.arange(0, h, device=x.device, dtype=dt) / h))
    th = positions.to(dt).unsqueeze(-1) * inv
    c, s = torch.cos(th).to(x.dtype), torch.sin(th).to(x.dtype)
    a, b = x[..., :h], x[..., h:]
    return torch.cat([a * c - b * s, a * s + b * c], dim=-1)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.num_heads = num_heads
        self.kv_rank = kv_rank
        self.d_nope, self.d_rope, self.d_v = d_nope, d_rope, d_v
        self.rope_base = rope_base
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def forward(self, x, cache=None):
        B, Tq, _ = x.shape
        H, dn, dr, dv = self.num_heads, self.d_nope, self.d_rope, self.d_v
        T_past = cache[0].shape[1] if cache is not None else 0
        positions = T_past + torch.arange(Tq, device=x.device)

        q = self.W_q(x).reshape(B, Tq, H, dn + dr).permute(0, 2, 1, 3)
        q_nope = q[..., :dn]
        q_pe = half_split_rope(q[..., dn:], positions, self.rope_base)

        latent = self.W_kv_a(x)
        c_kv = self.kv_norm(latent[..., :self.kv_rank])
        k_pe = half_split_rope(latent[..., self.kv_rank:], positions, self.rope_base)
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        Tk = c_kv.shape[1]

        kv = self.W_kv_b(c_kv).reshape(B, Tk, H, dn + dv).permute(0, 2, 1, 3)
        k_nope, v = kv[..., :dn], kv[..., dn:]

        scores = torch.matmul(q_nope, k_nope.transpose(2, 3))
        scores = scores + torch.matmul(q_pe, k_pe[:, None].transpose(2, 3))
        scores = scores / math.sqrt(dn + dr)

        qi = torch.arange(Tq, device=x.device).view(Tq, 1)
        kj = torch.arange(Tk, device=x.device).view(1, Tk)
        allowed = kj <= qi  # MISTAKE: top-left, ignores the cached keys
        scores = torch.where(allowed, scores, torch.full_like(scores, float("-inf")))
        attn = stable_softmax(scores, dim=-1)

        out = torch.matmul(attn, v).permute(0, 2, 1, 3).reshape(B, Tq, H * dv)
        return self.W_o(out), (c_kv, k_pe)
