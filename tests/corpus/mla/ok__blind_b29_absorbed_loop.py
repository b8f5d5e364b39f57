import math
import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        if x.dtype in (torch.float16, torch.bfloat16):
            return self._norm(x.float()).type_as(x) * self.weight
        return self._norm(x) * self.weight


def rope(x, start, base):
    # x (B, T, d) or (B, T, H, d) -> rotate at positions start .. start+T-1
    T, d = x.shape[1], x.shape[-1]
    work = torch.promote_types(x.dtype, torch.float32)
    inv = 1.0 / base ** (torch.arange(0, d, 2, dtype=work, device=x.device) / d)
    ang = torch.arange(start, start + T, dtype=work, device=x.device)[:, None] * inv
    if x.dim() == 4:
        ang = ang[:, None, :]
    cos, sin = ang.cos(), ang.sin()
    lo, hi = x[..., : d // 2].to(work), x[..., d // 2:].to(work)
    return torch.cat([lo * cos - hi * sin, hi * cos + lo * sin], -1).to(x.dtype)


class MultiHeadLatentAttention(nn.Module):
    """Weight-absorbed MLA, one head at a time."""

    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.H, self.R = num_heads, kv_rank
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

        q = self.W_q(x).view(B, T, self.H, self.dn + self.dr)
        q_nope = q[..., :self.dn]
        q_pe = rope(q[..., self.dn:], start, self.base)

        a = self.W_kv_a(x)
        c = self.kv_norm(a[..., :self.R])
        kp = rope(a[..., self.R:], start, self.base)
        if cache is not None:
            c = torch.cat([cache[0], c], dim=1)
            kp = torch.cat([cache[1], kp], dim=1)
        S = c.shape[1]

        allowed = torch.ones(T, S, dtype=torch.bool, device=x.device).tril(S - T)
        w = self.W_kv_b.weight.view(self.H, self.dn + self.dv, self.R)
        scale = 1.0 / math.sqrt(self.dn + self.dr)
        heads = []
        for h in range(self.H):
            w_uk = w[h, :self.dn]                       # (dn, R)
            w_uv = w[h, self.dn:]                       # (dv, R)
            q_lat = q_nope[:, :, h] @ w_uk              # (B, T, R)
            s = q_lat @ c.transpose(1, 2) + q_pe[:, :, h] @ kp.transpose(1, 2)   # (B, T, S)
            s = (s * scale).masked_fill(~allowed, float("-inf"))
            p = torch.softmax(s, dim=-1)
            heads.append((p @ c) @ w_uv.t())            # (B, T, dv)
        o = torch.cat(heads, dim=-1)
        return self.W_o(o), (c, kp)
