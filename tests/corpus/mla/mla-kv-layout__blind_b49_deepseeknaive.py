import math

import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.dim = dim
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        acc = torch.promote_types(x.dtype, torch.float32)
        xf = x.to(acc)
        inv = (xf.square().sum(-1, keepdim=True) / self.dim + self.eps).rsqrt()
        return (xf * inv).to(x.dtype) * self.weight


def rotate(x, start_pos, base):
    """Half-split RoPE on x (B, S, ..., r) for positions start_pos .. start_pos + S - 1."""
    S, r = x.shape[1], x.shape[-1]
    wt = torch.promote_types(x.dtype, torch.float32)
    t = torch.arange(start_pos, start_pos + S, device=x.device, dtype=wt)
    freqs = 1.0 / base ** (torch.arange(0, r, 2, device=x.device, dtype=wt) / r)
    ang = t[:, None] * freqs                                     # (S, r/2)
    ang = ang.view(1, S, *([1] * (x.dim() - 3)), r // 2)
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.n_heads = num_heads
        self.kv_lora_rank = kv_rank
        self.qk_nope_head_dim = d_nope
        self.qk_rope_head_dim = d_rope
        self.qk_head_dim = d_nope + d_rope
        self.v_head_dim = d_v
        self.rope_theta = rope_base
        self.softmax_scale = self.qk_head_dim ** -0.5
        self.W_q = nn.Linear(d_model, num_heads * self.qk_head_dim, bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def forward(self, x, cache=None):
        bsz, seqlen, _ = x.size()
        start_pos = 0 if cache is None else cache[0].shape[1]
        H = self.n_heads

        q = self.W_q(x).view(bsz, seqlen, H, self.qk_head_dim)
        q_nope, q_pe = torch.split(q, [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
        q_pe = rotate(q_pe, start_pos, self.rope_theta)                       # (B, S, H, r)

        kv, k_pe = torch.split(self.W_kv_a(x), [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        kv = self.kv_norm(kv)
        k_pe = rotate(k_pe, start_pos, self.rope_theta)                       # (B, S, r)
        if cache is not None:
            kv = torch.cat([cache[0], kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        end_pos = kv.shape[1]

        kv_full = self.W_kv_b(kv)                                             # (B, T, H * (nope + v))
        k_nope, v = [t.unflatten(-1, (H, -1)) for t in kv_full.split([H * self.qk_nope_head_dim, H * self.v_head_dim], dim=-1)]  # MISTAKE: reads W_kv_b as all keys then all values, not [k_nope | v] per head

        scores = (torch.einsum("bshd,bthd->bsht", q_nope, k_nope)
                  + torch.einsum("bshr,btr->bsht", q_pe, k_pe)) * self.softmax_scale
        qpos = torch.arange(start_pos, start_pos + seqlen, device=x.device)
        kpos = torch.arange(end_pos, device=x.device)
        future = (kpos[None, :] > qpos[:, None])[None, :, None, :]            # (1, S, 1, T)
        scores = scores.masked_fill(future, float("-inf"))
        scores = scores.softmax(dim=-1)
        o = torch.einsum("bsht,bthd->bshd", scores, v)
        out = self.W_o(o.flatten(2))
        return out, (kv, k_pe)
