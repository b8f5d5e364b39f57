import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        norm = torch.rsqrt(torch.mean(x * x, dim=-1, keepdim=True) + self.eps)
        return self.weight * x * norm


class Rotary:
    def __init__(self, dim, base):
        self.dim, self.base = dim, base

    def __call__(self, x, positions):
        # x (B, T, ..., dim), positions (T,)
        f = torch.promote_types(x.dtype, torch.float32)
        inv = self.base ** (-torch.arange(0, self.dim, 2, device=x.device, dtype=f) / self.dim)
        ang = positions.to(f)[:, None] * inv
        ang = ang.view(ang.shape[0], *([1] * (x.dim() - 3)), ang.shape[1])
        c, s = ang.cos(), ang.sin()
        x1, x2 = x.to(f).chunk(2, -1)
        return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], -1).to(x.dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.nh = num_heads
        self.rank = kv_rank
        self.dn, self.dr, self.dv = d_nope, d_rope, d_v
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)
        self.rotary = Rotary(d_rope, rope_base)

    def forward(self, x, cache=None):
        b, t, _ = x.shape
        t0 = 0 if cache is None else cache[0].shape[1]
        pos = torch.arange(t0, t0 + t, device=x.device)

        q = self.W_q(x).view(b, t, self.nh, self.dn + self.dr)
        q_nope, q_pe = q.split([self.dn, self.dr], -1)
        q_pe = self.rotary(q_pe, pos)

        c_kv, k_pe = self.W_kv_a(x).split([self.rank, self.dr], -1)
        c_kv = self.kv_norm(c_kv)
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], 1)
            k_pe = torch.cat([cache[1], k_pe], 1)
        s_len = c_kv.shape[1]
        k_rot = self.rotary(k_pe, torch.arange(s_len, device=x.device))  # MISTAKE

        w = self.W_kv_b.weight.view(self.nh, self.dn + self.dv, self.rank)
        q_abs = torch.einsum("bthn,hnr->bthr", q_nope, w[:, :self.dn])
        scores = torch.einsum("bthr,bsr->bhts", q_abs, c_kv)
        scores = scores + torch.einsum("bthp,bsp->bhts", q_pe, k_rot)
        scores = scores / (self.dn + self.dr) ** 0.5
        i = torch.arange(t, device=x.device)[:, None] + t0
        j = torch.arange(s_len, device=x.device)[None, :]
        scores = scores.masked_fill(j > i, float("-inf"))
        p = scores.softmax(-1)
        ctx = torch.einsum("bhts,bsr->bthr", p, c_kv)
        ctx = torch.einsum("bthr,hvr->bthv", ctx, w[:, self.dn:])
        return self.W_o(ctx.reshape(b, t, self.nh * self.dv)), (c_kv, k_pe)
