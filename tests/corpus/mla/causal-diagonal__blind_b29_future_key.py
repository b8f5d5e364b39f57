import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        scale = torch.rsqrt(x.square().mean(dim=-1, keepdim=True) + self.eps)
        return (x * scale) * self.weight


class HalfSplitRope:
    """cos/sin cached by position, grown on demand."""

    def __init__(self, dim, base):
        self.dim, self.base = dim, base
        self.cos = self.sin = None

    def _grow(self, n):
        inv = 1.0 / self.base ** (torch.arange(0, self.dim, 2, dtype=torch.float64) / self.dim)
        ang = torch.arange(n, dtype=torch.float64)[:, None] * inv[None, :]
        self.cos, self.sin = ang.cos(), ang.sin()

    def __call__(self, x, start):
        # x (B, H, T, d) or (B, T, d)
        T = x.shape[-2]
        if self.cos is None or self.cos.shape[0] < start + T:
            self._grow(max(64, 2 * (start + T)))
        ct = torch.promote_types(x.dtype, torch.float32)
        cos = self.cos[start:start + T].to(x.device, ct)
        sin = self.sin[start:start + T].to(x.device, ct)
        h = self.dim // 2
        x1, x2 = x[..., :h].to(ct), x[..., h:].to(ct)
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1).to(x.dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.h = num_heads
        self.kv_rank = kv_rank
        self.d_nope, self.d_rope, self.d_v = d_nope, d_rope, d_v
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)
        self.rope = HalfSplitRope(d_rope, rope_base)
        self.scale = (d_nope + d_rope) ** -0.5

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        T_past = 0 if cache is None else cache[0].shape[1]

        q = self.W_q(x).view(B, T, self.h, self.d_nope + self.d_rope).transpose(1, 2)
        q_nope = q[..., :self.d_nope]
        q_pe = self.rope(q[..., self.d_nope:], T_past)

        kv_a = self.W_kv_a(x)
        c_kv = self.kv_norm(kv_a[..., :self.kv_rank])
        k_pe = self.rope(kv_a[..., self.kv_rank:], T_past)
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        Tk = c_kv.shape[1]

        kv = self.W_kv_b(c_kv).view(B, Tk, self.h, self.d_nope + self.d_v).transpose(1, 2)
        k_nope, v = kv[..., :self.d_nope], kv[..., self.d_nope:]
        scores = (q_nope @ k_nope.mT + q_pe @ k_pe.unsqueeze(1).mT) * self.scale
        keep = torch.tril(torch.ones(T, Tk, dtype=torch.bool, device=x.device), diagonal=T_past + 1)  # MISTAKE
        scores = scores.masked_fill(~keep, float("-inf"))
        attn = scores.softmax(dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(B, T, self.h * self.d_v)
        return self.W_o(out), (c_kv, k_pe)
