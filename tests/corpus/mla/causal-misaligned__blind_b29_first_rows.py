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
        return self.weight * x * (x.pow(2).mean(-1, keepdim=True) + self.eps).rsqrt()


def rotate_half(t):
    a, b = t.chunk(2, dim=-1)
    return torch.cat([-b, a], dim=-1)


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

    def rope(self, x, positions):
        ft = torch.promote_types(x.dtype, torch.float32)
        inv_freq = 1.0 / self.rope_base ** (torch.arange(0, self.d_rope, 2, device=x.device, dtype=ft) / self.d_rope)
        freqs = torch.einsum("t,f->tf", positions.to(ft), inv_freq)
        emb = torch.cat([freqs, freqs], -1)
        return (x * emb.cos() + rotate_half(x) * emb.sin()).to(x.dtype)

    def forward(self, x, cache=None):
        B, Tq, _ = x.shape
        H = self.num_heads
        past = 0 if cache is None else cache[0].shape[1]
        positions = torch.arange(past, past + Tq, device=x.device)

        q = self.W_q(x).view(B, Tq, H, -1).transpose(1, 2)
        q_nope, q_pe = q.split([self.d_nope, self.d_rope], -1)
        q_pe = self.rope(q_pe, positions)

        c, k_pe = self.W_kv_a(x).split([self.kv_rank, self.d_rope], -1)
        c = self.kv_norm(c)
        k_pe = self.rope(k_pe, positions)
        if cache is not None:
            c = torch.cat([cache[0], c], 1)
            k_pe = torch.cat([cache[1], k_pe], 1)
        Tk = c.shape[1]

        k_nope, v = self.W_kv_b(c).view(B, Tk, H, -1).transpose(1, 2).split([self.d_nope, self.d_v], -1)
        scores = torch.einsum("bhqd,bhkd->bhqk", q_nope, k_nope) + torch.einsum("bhqd,bkd->bhqk", q_pe, k_pe)
        scores = scores / math.sqrt(self.d_nope + self.d_rope)
        causal = torch.tril(torch.ones(Tk, Tk, dtype=torch.bool, device=x.device))[:Tq]  # MISTAKE
        scores = scores.masked_fill(~causal, float("-inf"))
        probs = F.softmax(scores, dim=-1)
        out = torch.einsum("bhqk,bhkd->bqhd", probs, v).reshape(B, Tq, H * self.d_v)
        return self.W_o(out), (c, k_pe)
