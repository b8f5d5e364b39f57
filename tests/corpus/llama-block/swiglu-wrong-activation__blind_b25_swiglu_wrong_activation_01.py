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
        rms = torch.sqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x / rms


class SwiGLU(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        hidden = F.gelu(self.w1(x)) * self.w3(x)  # MISTAKE
        return self.w2(hidden)


def _rotate_half(t):
    half = t.shape[-1] // 2
    return torch.cat([-t[..., half:], t[..., :half]], dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, d_ff: int,
                 rope_base: float = 10000.0, eps: float = 1e-6):
        super().__init__()
        self.d_model = d_model
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.rope_base = rope_base
        self.attn_norm = RMSNorm(d_model, eps=eps)
        self.ffn_norm = RMSNorm(d_model, eps=eps)
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)
        self.ffn = SwiGLU(d_model, d_ff)

    def forward(self, x, positions=None):
        B, T, D = x.shape
        d = self.head_dim
        if positions is None:
            positions = torch.arange(T, device=x.device)

        # rope tables, broadcastable to (B, T, d)
        wdt = torch.promote_types(x.dtype, torch.float32)
        inv_freq = self.rope_base ** (-torch.arange(0, d, 2, device=x.device, dtype=wdt) / d)
        freqs = positions.to(wdt).unsqueeze(-1) * inv_freq
        freqs = torch.cat([freqs, freqs], dim=-1)
        cos, sin = freqs.cos().to(x.dtype), freqs.sin().to(x.dtype)

        a = self.attn_norm(x)
        q = self.W_q(a).view(B, T, self.num_heads, d)
        k = self.W_k(a).view(B, T, self.num_kv_heads, d)
        v = self.W_v(a).view(B, T, self.num_kv_heads, d)

        group = self.num_heads // self.num_kv_heads
        causal = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
        k_rot = [k[:, :, j] * cos + _rotate_half(k[:, :, j]) * sin for j in range(self.num_kv_heads)]
        heads = []
        for hh in range(self.num_heads):
            kv = hh // group
            qh = q[:, :, hh] * cos + _rotate_half(q[:, :, hh]) * sin   # (B, T, d)
            kh = k_rot[kv]
            vh = v[:, :, kv]
            sc = qh @ kh.transpose(-1, -2) / math.sqrt(d)               # (B, T, T)
            sc = torch.where(causal, sc, float("-inf"))
            heads.append(torch.softmax(sc, dim=-1) @ vh)
        attn_out = self.W_o(torch.cat(heads, dim=-1))

        h = x + attn_out
        return h + self.ffn(self.ffn_norm(h))
