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
        inv_rms = 1.0 / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return x * inv_rms * self.weight


def rotate(x, theta):
    # x (..., T, d); theta (T, d/2). Rotate each pair (x[i], x[i + d/2]) by a 2x2 matrix.
    half = x.shape[-1] // 2
    pair = torch.stack([x[..., :half], x[..., half:]], dim=-1)
    c, s = theta.cos().to(x.dtype), theta.sin().to(x.dtype)
    rot = torch.stack([torch.stack([c, s], -1), torch.stack([-s, c], -1)], -2)  # MISTAKE
    out = torch.einsum("...ij,...j->...i", rot, pair)
    return torch.cat([out[..., 0], out[..., 1]], dim=-1)


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
        H = self.num_heads
        offset = 0 if cache is None else cache[0].size(1)
        acc = torch.float64 if x.dtype == torch.float64 else torch.float32
        positions = torch.arange(offset, offset + T, device=x.device).to(acc)
        freqs = self.rope_base ** (-2.0 * torch.arange(self.d_rope // 2, device=x.device, dtype=acc) / self.d_rope)
        theta = positions[:, None] * freqs

        q = self.W_q(x).view(B, T, H, -1).transpose(1, 2)
        q_nope, q_pe = q[..., :self.d_nope], rotate(q[..., self.d_nope:], theta)
        c_kv, k_pe = torch.split(self.W_kv_a(x), [self.kv_rank, self.d_rope], dim=-1)
        c_kv = self.kv_norm(c_kv)
        k_pe = rotate(k_pe, theta)
        if cache is not None:
            c_kv = torch.cat((cache[0], c_kv), dim=1)
            k_pe = torch.cat((cache[1], k_pe), dim=1)
        S = c_kv.size(1)

        kv = self.W_kv_b(c_kv).view(B, S, H, -1).transpose(1, 2)
        k_nope, v = kv[..., :self.d_nope], kv[..., self.d_nope:]
        k = torch.cat([k_nope, k_pe[:, None, :, :].expand(-1, H, -1, -1)], dim=-1)
        qf = torch.cat([q_nope, q_pe], dim=-1)
        scores = torch.matmul(qf, k.transpose(-1, -2)) / math.sqrt(qf.size(-1))
        causal = torch.tril(torch.ones(T, S, dtype=torch.bool, device=x.device), diagonal=offset)
        scores = scores.masked_fill(~causal, torch.finfo(scores.dtype).min)
        probs = F.softmax(scores, dim=-1)
        out = torch.matmul(probs, v).transpose(1, 2).reshape(B, T, -1)
        return self.W_o(out), (c_kv, k_pe)
