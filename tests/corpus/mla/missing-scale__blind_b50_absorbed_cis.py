import math

import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        if x.dtype in (torch.float16, torch.bfloat16):
            return self._norm(x.float()).type_as(x) * self.weight
        return self._norm(x) * self.weight


def precompute_freqs_cis(dim, positions, theta, real_dtype):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2, device=positions.device, dtype=real_dtype) / dim))
    freqs = torch.outer(positions.to(real_dtype), freqs)
    return torch.polar(torch.ones_like(freqs), freqs)  # (T, dim/2) complex


def apply_rotary_emb(x, freqs_cis):
    # half-split pairs: feature i is the real part, feature i + d/2 the imaginary part
    real_dtype = freqs_cis.real.dtype
    x1, x2 = x.to(real_dtype).chunk(2, dim=-1)
    z = torch.complex(x1, x2) * freqs_cis
    return torch.cat((z.real, z.imag), dim=-1).to(x.dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, kv_rank: int, d_nope: int, d_rope: int, d_v: int,
                 rope_base: float = 10000.0):
        super().__init__()
        self.n_heads = num_heads
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
        H, dn, dr, dv, r = self.n_heads, self.d_nope, self.d_rope, self.d_v, self.kv_rank
        start = 0 if cache is None else cache[0].shape[1]
        positions = torch.arange(start, start + T, device=x.device)
        freqs_cis = precompute_freqs_cis(dr, positions, self.rope_base, torch.promote_types(x.dtype, torch.float32))

        q = self.W_q(x).view(B, T, H, dn + dr).permute(0, 2, 1, 3)  # (B, H, T, dn + dr)
        q_nope, q_pe = q[..., :dn], q[..., dn:]
        q_pe = apply_rotary_emb(q_pe, freqs_cis)

        c_kv, k_pe = torch.split(self.W_kv_a(x), [r, dr], dim=-1)
        c_kv = self.kv_norm(c_kv)
        k_pe = apply_rotary_emb(k_pe, freqs_cis)
        if cache is not None:
            c_kv = torch.cat((cache[0], c_kv), dim=1)
            k_pe = torch.cat((cache[1], k_pe), dim=1)
        Tk = c_kv.shape[1]

        w = self.W_kv_b.weight.unflatten(0, (H, dn + dv))  # (H, dn + dv, r)
        w_uk, w_uv = w[:, :dn], w[:, dn:]  # (H, dn, r), (H, dv, r)
        q_lat = q_nope @ w_uk  # (B, H, T, r): queries read the latent directly
        lat = c_kv.unsqueeze(1)  # (B, 1, Tk, r)
        scores = q_lat @ lat.transpose(-1, -2) + q_pe @ k_pe.unsqueeze(1).transpose(-1, -2)  # MISTAKE: never divided by sqrt(d_nope + d_rope)
        causal = torch.ones(T, Tk, dtype=torch.bool, device=x.device).tril(start)
        scores = scores.masked_fill(~causal, float("-inf"))
        p = scores.softmax(dim=-1)
        o = (p @ lat) @ w_uv.transpose(-1, -2)  # (B, H, T, dv)
        o = o.permute(0, 2, 1, 3).reshape(B, T, H * dv)
        return self.W_o(o), (c_kv, k_pe)
