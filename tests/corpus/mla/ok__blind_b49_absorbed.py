import math

import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        up = x.to(torch.promote_types(x.dtype, torch.float32))
        ms = torch.mean(up * up, dim=-1, keepdim=True)
        return (up / torch.sqrt(ms + self.eps)).to(x.dtype) * self.weight


def half_rope(t, pos, base):
    """t (..., S, r) with the time axis second to last; pos (S,)."""
    r = t.size(-1)
    ft = torch.promote_types(t.dtype, torch.float32)
    inv = torch.pow(torch.tensor(base, dtype=ft, device=t.device),
                    -torch.arange(0, r // 2, device=t.device, dtype=ft) * 2.0 / r)
    ang = pos.to(ft).unsqueeze(-1) * inv
    c, s = torch.cos(ang).to(t.dtype), torch.sin(ang).to(t.dtype)
    lo, hi = t[..., : r // 2], t[..., r // 2 :]
    return torch.cat([lo * c - hi * s, hi * c + lo * s], dim=-1)


class MultiHeadLatentAttention(nn.Module):
    """Absorbed MLA: W_kv_b's key half is folded into the query, its value half into the output."""

    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.nh, self.rank = num_heads, kv_rank
        self.dn, self.dr, self.dv = d_nope, d_rope, d_v
        self.base = rope_base
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def forward(self, x, cache=None):
        B, S, _ = x.shape
        nh, dn, dr, dv = self.nh, self.dn, self.dr, self.dv
        t0 = cache[0].shape[1] if cache is not None else 0
        pos = torch.arange(t0, t0 + S, device=x.device)

        qh = self.W_q(x).reshape(B, S, nh, dn + dr)
        q_nope, q_rot = qh[..., :dn], qh[..., dn:]
        q_rot = half_rope(q_rot.transpose(1, 2), pos, self.base)           # (B, nh, S, dr)

        lat = self.W_kv_a(x)
        c_new = self.kv_norm(lat[..., : self.rank])                         # (B, S, rank)
        kr_new = half_rope(lat[..., self.rank :], pos, self.base)            # (B, S, dr)
        if cache is None:
            c_all, kr_all = c_new, kr_new
        else:
            c_all = torch.cat((cache[0], c_new), 1)
            kr_all = torch.cat((cache[1], kr_new), 1)
        T = c_all.shape[1]

        wb = self.W_kv_b.weight.view(nh, dn + dv, self.rank)
        w_uk, w_uv = wb[:, :dn], wb[:, dn:]                                  # (nh, dn, rank), (nh, dv, rank)

        q_lat = torch.einsum("bsnd,ndc->bnsc", q_nope, w_uk)                 # query moved into latent space
        logits = torch.einsum("bnsc,btc->bnst", q_lat, c_all)
        logits = logits + torch.einsum("bnsr,btr->bnst", q_rot, kr_all)
        logits = logits / math.sqrt(dn + dr)

        i = torch.arange(S, device=x.device).view(S, 1) + t0
        j = torch.arange(T, device=x.device).view(1, T)
        logits = torch.where(j <= i, logits, torch.full_like(logits, float("-inf")))
        p = torch.softmax(logits, dim=-1)

        ctx_lat = torch.einsum("bnst,btc->bnsc", p, c_all)                   # weights on the latents
        ctx = torch.einsum("bnsc,nvc->bsnv", ctx_lat, w_uv)                  # then up to each head's value
        return self.W_o(ctx.reshape(B, S, nh * dv)), (c_all, kr_all)
