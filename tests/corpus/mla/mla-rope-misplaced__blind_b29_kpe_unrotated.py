import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        dt = x.dtype
        h = x.to(torch.promote_types(dt, torch.float32))
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(dt)


def build_cos_sin(n_pos, dim, base, device, dtype):
    # table for positions 0 .. n_pos - 1
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, device=device, dtype=dtype) / dim))
    ang = torch.arange(n_pos, device=device, dtype=dtype)[:, None] * inv_freq[None, :]
    return ang.cos(), ang.sin()


def rotate(x, cos, sin):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1).to(x.dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.heads = num_heads
        self.kv_rank = kv_rank
        self.dims = (d_nope, d_rope, d_v)
        self.rope_base = rope_base
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def forward(self, x, cache=None):
        dn, dr, dv = self.dims
        B, T, _ = x.shape
        H = self.heads
        past = 0 if cache is None else cache[0].shape[1]
        total = past + T
        cos, sin = build_cos_sin(total, dr, self.rope_base, x.device, torch.promote_types(x.dtype, torch.float32))
        cos, sin = cos[past:], sin[past:]

        q = self.W_q(x).view(B, T, H, dn + dr)
        q_nope, q_pe = q[..., :dn], q[..., dn:]
        q_pe = rotate(q_pe, cos[:, None, :], sin[:, None, :])

        latent, k_pe = torch.split(self.W_kv_a(x), [self.kv_rank, dr], dim=-1)
        latent = self.kv_norm(latent)
        k_pe_rot = rotate(k_pe, cos, sin)

        c_all = latent if cache is None else torch.cat([cache[0], latent], dim=1)
        k_pe_all = k_pe if cache is None else torch.cat([cache[1], k_pe], dim=1)  # MISTAKE

        kv = self.W_kv_b(c_all).view(B, total, H, dn + dv)
        k_nope, v = kv[..., :dn], kv[..., dn:]

        scores = torch.einsum("bqhd,bkhd->bhqk", q_nope, k_nope)
        scores = scores + torch.einsum("bqhd,bkd->bhqk", q_pe, k_pe_all)
        scores = scores * (dn + dr) ** -0.5
        q_idx = torch.arange(past, total, device=x.device)
        k_idx = torch.arange(total, device=x.device)
        visible = k_idx[None, :] <= q_idx[:, None]
        scores = scores.masked_fill(~visible, float("-inf"))
        attn = F.softmax(scores, dim=-1)
        out = torch.einsum("bhqk,bkhd->bqhd", attn, v).reshape(B, T, H * dv)
        return self.W_o(out), (c_all, k_pe_all)
