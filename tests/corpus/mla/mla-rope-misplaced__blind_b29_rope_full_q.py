import math
import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        ms = x.pow(2).mean(dim=-1, keepdim=True)
        return x * (ms + self.eps).rsqrt() * self.weight


class RoPE(nn.Module):
    def __init__(self, base: float = 10000.0):
        super().__init__()
        self.base = base

    @staticmethod
    def _rotate_half(x):
        half = x.shape[-1] // 2
        return torch.cat([-x[..., half:], x[..., :half]], dim=-1)

    def forward(self, x, positions):
        d = x.shape[-1]
        wt = torch.promote_types(x.dtype, torch.float32)
        inv_freq = 1.0 / self.base ** (torch.arange(0, d, 2, device=x.device, dtype=wt) / d)
        freqs = positions.to(wt)[:, None] * inv_freq
        emb = torch.cat([freqs, freqs], dim=-1)
        return (x.to(wt) * emb.cos() + self._rotate_half(x.to(wt)) * emb.sin()).to(x.dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.num_heads = num_heads
        self.kv_rank = kv_rank
        self.d_nope = d_nope
        self.d_rope = d_rope
        self.d_v = d_v
        self.W_q = nn.Linear(d_model, num_heads * (d_nope + d_rope), bias=False)
        self.W_kv_a = nn.Linear(d_model, kv_rank + d_rope, bias=False)
        self.kv_norm = RMSNorm(kv_rank, eps=1e-6)
        self.W_kv_b = nn.Linear(kv_rank, num_heads * (d_nope + d_v), bias=False)
        self.W_o = nn.Linear(num_heads * d_v, d_model, bias=False)
        self.rotary = RoPE(rope_base)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H = self.num_heads
        n_cached = 0 if cache is None else cache[0].shape[1]
        positions = torch.arange(n_cached, n_cached + T, device=x.device)

        q = self.W_q(x).view(B, T, H, self.d_nope + self.d_rope).transpose(1, 2)
        q = self.rotary(q, positions)  # MISTAKE
        q_nope, q_pe = q.split([self.d_nope, self.d_rope], dim=-1)

        c_kv, k_pe = self.W_kv_a(x).split([self.kv_rank, self.d_rope], dim=-1)
        c_kv = self.kv_norm(c_kv)
        k_pe = self.rotary(k_pe, positions)
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        S = c_kv.shape[1]

        kv = self.W_kv_b(c_kv).view(B, S, H, self.d_nope + self.d_v).transpose(1, 2)
        k_nope, v = kv.split([self.d_nope, self.d_v], dim=-1)
        k = torch.cat([k_nope, k_pe.unsqueeze(1).expand(-1, H, -1, -1)], dim=-1)
        q = torch.cat([q_nope, q_pe], dim=-1)

        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        mask = torch.full((T, S), float("-inf"), device=x.device, dtype=scores.dtype)
        mask = torch.triu(mask, diagonal=S - T + 1)
        probs = torch.softmax(scores + mask, dim=-1)
        o = (probs @ v).transpose(1, 2).reshape(B, T, -1)
        return self.W_o(o), (c_kv, k_pe)
