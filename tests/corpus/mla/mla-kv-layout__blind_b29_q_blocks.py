import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return self.weight * (x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rope_rotate(x, pos, base):
    """x (B, H, T, d) or (B, T, d); pos (T,)."""
    d = x.shape[-1]
    h = d // 2
    ft = torch.promote_types(x.dtype, torch.float32)
    inv = torch.pow(torch.tensor(base, dtype=ft, device=x.device),
                    -torch.arange(h, dtype=ft, device=x.device) * 2 / d)
    ang = pos.to(ft).unsqueeze(-1) * inv
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    x1, x2 = x[..., :h], x[..., h:]
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), -1)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.H = num_heads
        self.kv_rank = kv_rank
        self.d_nope = d_nope
        self.d_rope = d_rope
        self.d_v = d_v
        self.base = rope_base
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H = self.H
        T_past = 0 if cache is None else cache[0].shape[1]
        pos = torch.arange(T_past, T_past + T, device=x.device)

        q_nope, q_pe = self.W_q(x).split([H * self.d_nope, H * self.d_rope], dim=-1)  # MISTAKE
        q_nope = q_nope.view(B, T, H, self.d_nope).transpose(1, 2)
        q_pe = q_pe.view(B, T, H, self.d_rope).transpose(1, 2)
        q_pe = rope_rotate(q_pe, pos, self.base)

        c_kv, k_pe = self.W_kv_a(x).split([self.kv_rank, self.d_rope], dim=-1)
        c_kv = self.kv_norm(c_kv)
        k_pe = rope_rotate(k_pe, pos, self.base)
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        T_all = c_kv.shape[1]

        kv = self.W_kv_b(c_kv).view(B, T_all, H, self.d_nope + self.d_v).transpose(1, 2)
        k_nope, v = kv.split([self.d_nope, self.d_v], dim=-1)

        scores = q_nope @ k_nope.transpose(-2, -1) + q_pe @ k_pe.unsqueeze(1).transpose(-2, -1)
        scores = scores / math.sqrt(self.d_nope + self.d_rope)
        row = torch.arange(T, device=x.device).view(T, 1)
        col = torch.arange(T_all, device=x.device).view(1, T_all)
        scores = scores.masked_fill(col > row + T_past, float("-inf"))
        attn = F.softmax(scores, dim=-1)
        out = (attn @ v).transpose(1, 2).contiguous().view(B, T, H * self.d_v)
        return self.W_o(out), (c_kv, k_pe)
