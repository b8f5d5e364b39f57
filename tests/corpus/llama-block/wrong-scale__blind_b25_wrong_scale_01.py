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
        ms = x.square().mean(dim=-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(ms + self.eps))


class SwiGLU(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


def rope_complex(x, positions, base):
    """Half-split RoPE done with complex numbers: pair i is (x[i], x[i + d/2])."""
    d = x.shape[-1]
    half = d // 2
    ct = torch.promote_types(x.dtype, torch.float32)
    freqs = base ** (-torch.arange(half, device=x.device, dtype=ct) * 2 / d)
    angles = positions.to(ct).unsqueeze(-1) * freqs          # (T, half) or (B, T, half)
    rot = torch.polar(torch.ones_like(angles), angles)
    if rot.dim() == 3:
        rot = rot.unsqueeze(1)                                # (B, 1, T, half)
    xc = torch.complex(x[..., :half].to(ct), x[..., half:].to(ct))
    xc = xc * rot
    return torch.cat([xc.real, xc.imag], dim=-1).to(x.dtype)


class LlamaBlock(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, d_ff: int,
                 rope_base: float = 10000.0, eps: float = 1e-6):
        super().__init__()
        self.d_model = d_model
        self.h = num_heads
        self.hkv = num_kv_heads
        self.d = d_model // num_heads
        self.rope_base = rope_base
        self.attn_norm = RMSNorm(d_model, eps)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)
        self.ffn = SwiGLU(d_model, d_ff)

    def forward(self, x, positions=None):
        B, T, D = x.shape
        if positions is None:
            positions = torch.arange(T, device=x.device)

        a = self.attn_norm(x)
        q = self.W_q(a).view(B, T, self.h, self.d).transpose(1, 2)
        k = self.W_k(a).view(B, T, self.hkv, self.d).transpose(1, 2)
        v = self.W_v(a).view(B, T, self.hkv, self.d).transpose(1, 2)
        q = rope_complex(q, positions, self.rope_base)
        k = rope_complex(k, positions, self.rope_base)

        # group query heads by the kv head they read: (B, Hkv, G, T, d)
        g = self.h // self.hkv
        qg = q.reshape(B, self.hkv, g, T, self.d)
        s = qg @ k.unsqueeze(2).transpose(-1, -2) / math.sqrt(self.d_model)  # MISTAKE
        future = torch.arange(T, device=x.device)[None, :] > torch.arange(T, device=x.device)[:, None]
        s = s.masked_fill(future, float("-inf"))
        p = s.softmax(dim=-1)
        o = p @ v.unsqueeze(2)                                # (B, Hkv, G, T, d)
        o = o.reshape(B, self.h, T, self.d).transpose(1, 2).reshape(B, T, D)
        h = x + self.W_o(o)

        return h + self.ffn(self.ffn_norm(h))
