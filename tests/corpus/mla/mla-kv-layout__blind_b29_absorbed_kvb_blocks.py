import math
import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        acc = torch.promote_types(x.dtype, torch.float32)
        y = x.to(acc)
        y = y / torch.sqrt(y.square().mean(-1, keepdim=True) + self.eps)
        return y.to(x.dtype) * self.weight


def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    acc = torch.promote_types(x.dtype, torch.float32)
    freqs = 1.0 / base ** (torch.arange(0, d, 2, device=x.device, dtype=acc) / d)
    theta = positions.to(acc)[:, None] * freqs[None]
    cos = torch.cat([theta.cos(), theta.cos()], -1)
    sin = torch.cat([-theta.sin(), theta.sin()], -1)
    swapped = torch.cat([x[..., d // 2:], x[..., : d // 2]], -1)
    return (x.to(acc) * cos + swapped.to(acc) * sin).to(x.dtype)


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
        B, T, _ = x.shape
        H, R = self.num_heads, self.kv_rank
        past = 0 if cache is None else cache[0].shape[1]
        positions = torch.arange(past, past + T, device=x.device)

        q = self.W_q(x).view(B, T, H, self.d_nope + self.d_rope).transpose(1, 2)   # B H T .
        q_nope = q[..., :self.d_nope]
        q_pe = apply_rope(q[..., self.d_nope:], positions, self.rope_base)

        kv_a = self.W_kv_a(x)
        c_kv = self.kv_norm(kv_a[..., :R])
        k_pe = apply_rope(kv_a[..., R:], positions, self.rope_base)
        if cache is not None:
            c_kv = torch.cat((cache[0], c_kv), dim=1)
            k_pe = torch.cat((cache[1], k_pe), dim=1)
        S = c_kv.shape[1]

        # absorb W_kv_b: keys folded into the query, values into the output
        w_uk, w_uv = self.W_kv_b.weight.split([H * self.d_nope, H * self.d_v], dim=0)  # MISTAKE
        w_uk = w_uk.view(H, self.d_nope, R)
        w_uv = w_uv.view(H, self.d_v, R)

        q_lat = torch.matmul(q_nope, w_uk)                                 # B H T R
        scores = torch.matmul(q_lat, c_kv.transpose(1, 2).unsqueeze(1))  # B H T S
        scores = scores + torch.matmul(q_pe, k_pe.transpose(1, 2).unsqueeze(1))
        scores = scores / math.sqrt(self.d_nope + self.d_rope)
        blocked = torch.ones(T, S, dtype=torch.bool, device=x.device).triu(past + 1)
        scores = scores.masked_fill(blocked, float("-inf"))
        attn = torch.softmax(scores, dim=-1)
        o_lat = torch.matmul(attn, c_kv.unsqueeze(1))                      # B H T R
        o = torch.matmul(o_lat, w_uv.transpose(1, 2))                      # B H T dv
        o = o.transpose(1, 2).reshape(B, T, H * self.d_v)
        return self.W_o(o), (c_kv, k_pe)
