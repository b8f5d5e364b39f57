import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.to(torch.promote_types(x.dtype, torch.float32))
        h = h / torch.sqrt(h.square().mean(dim=-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)


def _rope(x, pos, base):
    # x (..., T, n) with n even; rotate the pairs (i, i + n/2)
    n = x.shape[-1]
    ft = torch.promote_types(x.dtype, torch.float32)
    inv = base ** (-torch.arange(0, n, 2, device=x.device, dtype=ft) / n)
    ang = pos.to(ft)[:, None] * inv[None, :]
    c, s = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    a, b = x[..., : n // 2], x[..., n // 2:]
    return torch.cat((a * c - b * s, a * s + b * c), dim=-1)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.h = num_heads
        self.kv_rank = kv_rank
        self.d_nope, self.d_rope, self.d_v = d_nope, d_rope, d_v
        self.base = rope_base
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H = self.h
        T0 = cache[0].shape[1] if cache is not None else 0
        pos = torch.arange(T0, T0 + T, device=x.device)

        q = self.W_q(x).view(B, T, H, -1).transpose(1, 2)
        q_nope, q_rot = q.split([self.d_nope, self.d_rope], dim=-1)
        lat, k_rot = self.W_kv_a(x).split([self.kv_rank, self.d_rope], dim=-1)
        lat = self.kv_norm(lat)
        q_rot, k_rot = _rope(q_rot, pos, self.base), _rope(k_rot, pos, self.base)
        if cache is not None:
            lat = torch.cat((cache[0], lat), dim=1)
            k_rot = torch.cat((cache[1], k_rot), dim=1)
        S = lat.shape[1]

        kv = self.W_kv_b(lat).view(B, S, H, -1).transpose(1, 2)
        k_nope, v = kv.split([self.d_nope, self.d_v], dim=-1)
        k = torch.cat((k_nope, k_rot[:, None].expand(B, H, S, self.d_rope)), dim=-1)
        q = torch.cat((q_nope, q_rot), dim=-1)

        scale = v.shape[-1] ** -0.5  # MISTAKE: scale taken from the value width d_v, not d_nope + d_rope
        att = (q @ k.transpose(-1, -2)) * scale
        future = torch.ones(T, S, dtype=torch.bool, device=x.device).triu(T0 + 1)
        att = att.masked_fill(future, float("-inf"))
        att = att.softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, H * self.d_v)
        return self.W_o(y), (lat, k_rot)
