import math

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return self.weight * x * (x.pow(2).mean(dim=-1, keepdim=True) + self.eps).rsqrt()


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rope_cos_sin(positions, dim, base, dtype):
    work = torch.float64 if dtype == torch.float64 else torch.float32
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, device=positions.device, dtype=work) / dim))
    freqs = torch.outer(positions.to(work), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.num_heads = num_heads
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

    def forward(self, x, cache=None):
        bsz, q_len, _ = x.shape
        H = self.num_heads
        past_len = 0 if cache is None else cache[0].shape[1]

        q = self.W_q(x).view(bsz, q_len, H, -1).transpose(1, 2)
        q_nope, q_pe = q.split([self.d_nope, self.d_rope], dim=-1)
        q_pos = torch.arange(past_len, past_len + q_len, device=x.device)
        cos, sin = rope_cos_sin(q_pos, self.d_rope, self.rope_base, x.dtype)
        q_pe = q_pe * cos + rotate_half(q_pe) * sin

        compressed_kv, k_pe = self.W_kv_a(x).split([self.kv_rank, self.d_rope], dim=-1)
        compressed_kv = self.kv_norm(compressed_kv)
        if cache is not None:
            compressed_kv = torch.cat([cache[0], compressed_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        kv_len = compressed_kv.shape[1]
        k_cos, k_sin = rope_cos_sin(torch.arange(kv_len, device=x.device), self.d_rope, self.rope_base, x.dtype)
        k_pe_rot = k_pe * k_cos + rotate_half(k_pe) * k_sin

        kv = self.W_kv_b(compressed_kv).view(bsz, kv_len, H, -1).transpose(1, 2)
        k_nope, value_states = kv.split([self.d_nope, self.d_v], dim=-1)

        attn = torch.matmul(q_nope, k_nope.transpose(2, 3))
        attn = attn + torch.matmul(q_pe, k_pe_rot.unsqueeze(1).transpose(2, 3))
        attn = attn / math.sqrt(self.d_nope + self.d_rope)
        causal = torch.ones(q_len, kv_len, dtype=torch.bool, device=x.device).triu(past_len + 1)
        attn = attn.masked_fill(causal, float("-inf"))
        attn = attn.softmax(dim=-1)
        out = torch.matmul(attn, value_states).transpose(1, 2).reshape(bsz, q_len, H * self.d_v)
        return self.W_o(out), (compressed_kv, k_pe)  # MISTAKE
