import math
import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        in_dtype = x.dtype
        if in_dtype in (torch.float16, torch.bfloat16):
            x = x.float()
        ms = (x * x).mean(dim=-1, keepdim=True)
        y = x / torch.sqrt(ms + self.eps)
        return (y * self.weight.to(y.dtype)).to(in_dtype)


def half_split_rope(t, pos, base):
    """t (..., L, d); pos (L,) integer positions."""
    d = t.shape[-1]
    half = d // 2
    work = torch.promote_types(t.dtype, torch.float32)
    i = torch.arange(half, device=t.device, dtype=work)
    theta = pos.to(work)[:, None] * base ** (-2.0 * i / d)
    c, s = torch.cos(theta), torch.sin(theta)
    a, b = t[..., :half].to(work), t[..., half:].to(work)
    out = torch.cat([a * c - b * s, b * c + a * s], dim=-1)
    return out.to(t.dtype)


def causal_keep(n_q, n_k, device):
    # bottom-right: query i sits at absolute position i + (n_k - n_q)
    qi = torch.arange(n_q, device=device).unsqueeze(1) + (n_k - n_q)
    kj = torch.arange(n_k, device=device).unsqueeze(0)
    return kj <= qi


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.h = num_heads
        self.r = kv_rank
        self.dn, self.dr, self.dv = d_nope, d_rope, d_v
        self.base = rope_base
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def forward(self, x, cache=None):
        bs, n_new, _ = x.shape
        n_past = cache[0].shape[1] if cache is not None else 0
        pos = torch.arange(n_past, n_past + n_new, device=x.device)

        q = self.W_q(x).reshape(bs, n_new, self.h, self.dn + self.dr).permute(0, 2, 1, 3)
        q_nope = q[..., :self.dn]
        q_rot = half_split_rope(q[..., self.dn:], pos, self.base)

        lat = self.W_kv_a(x)
        c_new = self.kv_norm(lat[..., :self.r])
        kr_new = half_split_rope(lat[..., self.r:], pos, self.base)
        if cache is None:
            c_all, kr_all = c_new, kr_new
        else:
            c_all = torch.cat((cache[0], c_new), dim=1)
            kr_all = torch.cat((cache[1], kr_new), dim=1)
        n_all = c_all.shape[1]

        kv = self.W_kv_b(c_all).reshape(bs, n_all, self.h, self.dn + self.dv).permute(0, 2, 1, 3)
        k_nope, v = kv[..., :self.dn], kv[..., self.dn:]

        s_nope = q_nope @ k_nope.transpose(-1, -2)
        s_rope = q_rot @ kr_all.unsqueeze(1).transpose(-1, -2)
        scores = (s_nope + s_rope) / math.sqrt(self.dn + self.dr)
        keep = causal_keep(n_new, n_all, x.device)
        scores = torch.where(keep, scores, torch.finfo(scores.dtype).min)
        probs = torch.softmax(scores, dim=-1)
        ctx = (probs @ v).permute(0, 2, 1, 3).reshape(bs, n_new, self.h * self.dv)
        return self.W_o(ctx), (c_all, kr_all)
