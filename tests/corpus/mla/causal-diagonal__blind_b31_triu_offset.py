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
        variance = x.pow(2).mean(dim=-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


def rotate_half(t):
    t1 = t[..., : t.shape[-1] // 2]
    t2 = t[..., t.shape[-1] // 2:]
    return torch.cat((-t2, t1), dim=-1)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.n_head = num_heads
        self.kv_rank = kv_rank
        self.d_nope = d_nope
        self.d_rope = d_rope
        self.d_v = d_v
        self.rope_base = rope_base
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)

    def rope_cos_sin(self, positions, dtype):
        acc = torch.float64 if dtype == torch.float64 else torch.float32
        inv_freq = 1.0 / (self.rope_base ** (torch.arange(0, self.d_rope, 2, dtype=acc, device=positions.device)
                                             / self.d_rope))
        freqs = torch.outer(positions.to(acc), inv_freq)
        emb = torch.cat([freqs, freqs], dim=-1)
        return emb.cos().to(dtype), emb.sin().to(dtype)

    def forward(self, x, cache=None):
        b, t, _ = x.shape
        past_len = 0 if cache is None else cache[0].shape[1]

        q = self.W_q(x).view(b, t, self.n_head, -1).transpose(1, 2)
        q_nope, q_pe = q.split([self.d_nope, self.d_rope], dim=-1)
        c_kv, k_pe = self.W_kv_a(x).split([self.kv_rank, self.d_rope], dim=-1)
        c_kv = self.kv_norm(c_kv)

        cos, sin = self.rope_cos_sin(torch.arange(past_len, past_len + t, device=x.device), x.dtype)
        q_pe = q_pe * cos + rotate_half(q_pe) * sin
        k_pe = k_pe * cos + rotate_half(k_pe) * sin

        if cache is not None:
            c_kv = torch.cat((cache[0], c_kv), dim=1)
            k_pe = torch.cat((cache[1], k_pe), dim=1)
        kv_len = c_kv.shape[1]

        kv = self.W_kv_b(c_kv).view(b, kv_len, self.n_head, -1).transpose(1, 2)
        k_nope, v = kv.split([self.d_nope, self.d_v], dim=-1)

        scores = q_nope @ k_nope.transpose(-2, -1) + q_pe @ k_pe.unsqueeze(1).transpose(-2, -1)
        scores = scores / math.sqrt(self.d_nope + self.d_rope)
        neg_inf = torch.full((t, kv_len), float("-inf"), device=x.device, dtype=scores.dtype)
        mask = torch.triu(neg_inf, diagonal=kv_len - t)  # MISTAKE
        attn = F.softmax(scores + mask, dim=-1)

        y = (attn @ v).transpose(1, 2).contiguous().view(b, t, self.n_head * self.d_v)
        return self.W_o(y), (c_kv, k_pe)
