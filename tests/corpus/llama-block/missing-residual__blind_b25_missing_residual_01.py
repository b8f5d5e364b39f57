import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.dim = dim
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        mean_sq = (x * x).sum(dim=-1, keepdim=True) / x.shape[-1]
        return x / torch.sqrt(mean_sq + self.eps) * self.weight


class SwiGLU(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(nn.functional.silu(self.w1(x)) * self.w3(x))


def apply_rope(x, positions, base=10000.0):
    B, H, T, d = x.shape
    half = d // 2
    dt = torch.promote_types(x.dtype, torch.float32)
    if positions.dim() == 1:
        positions = positions.expand(B, T)
    i = torch.arange(half, dtype=dt, device=x.device)
    theta = positions.to(dt)[:, None, :, None] * torch.pow(base, -2.0 * i / d)   # (B, 1, T, half)
    cos, sin = torch.cos(theta).to(x.dtype), torch.sin(theta).to(x.dtype)
    x1 = x[..., :half]
    x2 = x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


def causal_attention(q, k, v):
    T = q.shape[-2]
    scores = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
    mask = torch.ones(T, T, device=q.device).tril().bool()
    scores = scores.masked_fill(mask.logical_not(), float("-inf"))
    attn = F.softmax(scores, dim=-1)
    return torch.matmul(attn, v)


class LlamaBlock(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_base=10000.0, eps=1e-6):
        super().__init__()
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.rope_base = rope_base
        self.attn_norm = RMSNorm(d_model, eps)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)
        self.ffn = SwiGLU(d_model, d_ff)

    def self_attn(self, x, positions):
        B, T, D = x.shape
        H, Hkv, hd = self.num_heads, self.num_kv_heads, self.head_dim
        q = self.W_q(x).view(B, T, H, hd).transpose(1, 2)
        k = self.W_k(x).view(B, T, Hkv, hd).transpose(1, 2)
        v = self.W_v(x).view(B, T, Hkv, hd).transpose(1, 2)
        q = apply_rope(q, positions, self.rope_base)
        k = apply_rope(k, positions, self.rope_base)
        n_rep = H // Hkv
        k = k[:, :, None].expand(B, Hkv, n_rep, T, hd).flatten(1, 2)
        v = v[:, :, None].expand(B, Hkv, n_rep, T, hd).flatten(1, 2)
        out = causal_attention(q, k, v)
        out = out.transpose(1, 2).reshape(B, T, D)
        return self.W_o(out)

    def forward(self, x, positions=None):
        if positions is None:
            positions = torch.arange(x.shape[1], device=x.device)
        h = self.self_attn(self.attn_norm(x), positions)  # MISTAKE
        out = h + self.ffn(self.ffn_norm(h))
        return out
