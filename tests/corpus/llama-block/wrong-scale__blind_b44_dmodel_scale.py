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
        variance = x.to(torch.promote_types(x.dtype, torch.float32)).pow(2).mean(-1, keepdim=True)
        hidden = x * torch.rsqrt(variance + self.eps).to(x.dtype)
        return self.weight * hidden


class SwiGLU(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


def build_rope(positions, dim, base, dtype):
    work = torch.float64 if dtype == torch.float64 else torch.float32
    exponents = torch.arange(dim // 2, device=positions.device, dtype=work) * 2.0 / dim
    inv_freq = 1.0 / torch.pow(base, exponents)
    ang = positions.to(work)[..., None] * inv_freq
    ang = torch.cat([ang, ang], dim=-1)
    if ang.ndim == 3:
        ang = ang[:, None]
    return ang.cos().to(dtype), ang.sin().to(dtype)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, d_ff: int,
                 rope_base: float = 10000.0, eps: float = 1e-6):
        super().__init__()
        self.d_model = d_model
        self.n_head = num_heads
        self.n_kv = num_kv_heads
        self.hd = d_model // num_heads
        self.rope_base = rope_base
        self.attn_norm = RMSNorm(d_model, eps)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.hd, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.hd, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)
        self.ffn = SwiGLU(d_model, d_ff)

    def _split(self, t, n):
        B, T, _ = t.shape
        return t.view(B, T, n, self.hd).transpose(1, 2)

    def forward(self, x, positions=None):
        B, T, _ = x.shape
        if positions is None:
            positions = torch.arange(T, device=x.device)

        xn = self.attn_norm(x)
        q = self._split(self.W_q(xn), self.n_head)
        k = self._split(self.W_k(xn), self.n_kv)
        v = self._split(self.W_v(xn), self.n_kv)
        cos, sin = build_rope(positions, self.hd, self.rope_base, x.dtype)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin

        rep = self.n_head // self.n_kv
        k = k.unsqueeze(2).expand(-1, -1, rep, -1, -1).flatten(1, 2)
        v = v.unsqueeze(2).expand(-1, -1, rep, -1, -1).flatten(1, 2)

        scale = 1.0 / math.sqrt(self.d_model)  # MISTAKE
        logits = torch.einsum("bhid,bhjd->bhij", q, k) * scale
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        logits = logits.masked_fill(~causal, float("-inf"))
        attn = logits.softmax(dim=-1)
        ctx = torch.einsum("bhij,bhjd->bihd", attn, v).reshape(B, T, self.d_model)
        h = x + self.W_o(ctx)
        return h + self.ffn(self.ffn_norm(h))
