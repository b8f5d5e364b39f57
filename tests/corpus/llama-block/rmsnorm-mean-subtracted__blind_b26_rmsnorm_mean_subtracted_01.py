import math
import torch
from torch import nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        x = x - x.mean(dim=-1, keepdim=True)  # MISTAKE
        return x * x.pow(2).mean(dim=-1, keepdim=True).add(self.eps).rsqrt() * self.weight


class SwiGLU(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)  # gate
        self.w3 = nn.Linear(dim, hidden, bias=False)  # up
        self.w2 = nn.Linear(hidden, dim, bias=False)  # down

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


def apply_rope(x, positions, base=10000.0):
    # x: (B, H, T, d), positions: (T,) or (B, T)
    d = x.shape[-1]
    half = d // 2
    work = x.dtype if x.dtype in (torch.float32, torch.float64) else torch.float32
    freqs = base ** (-torch.arange(half, device=x.device, dtype=work) * 2 / d)
    theta = positions.to(work).unsqueeze(-1) * freqs
    if theta.dim() == 3:
        theta = theta.unsqueeze(1)
    cos, sin = theta.cos().to(x.dtype), theta.sin().to(x.dtype)
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, d_ff: int,
                 rope_base: float = 10000.0, eps: float = 1e-6):
        super().__init__()
        assert d_model % num_heads == 0 and num_heads % num_kv_heads == 0
        self.n_heads = num_heads
        self.n_kv_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.rope_base = rope_base
        self.attn_norm = RMSNorm(d_model, eps)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)
        self.ffn = SwiGLU(d_model, d_ff)

    def forward(self, x, positions=None):
        B, T, D = x.shape
        if positions is None:
            positions = torch.arange(T, device=x.device)
        H, Hkv, d = self.n_heads, self.n_kv_heads, self.head_dim

        a = self.attn_norm(x)
        q = self.W_q(a).reshape(B, T, H, d).permute(0, 2, 1, 3)
        k = self.W_k(a).reshape(B, T, Hkv, d).permute(0, 2, 1, 3)
        v = self.W_v(a).reshape(B, T, Hkv, d).permute(0, 2, 1, 3)

        q = apply_rope(q, positions, self.rope_base)
        k = apply_rope(k, positions, self.rope_base)

        k = k.repeat_interleave(H // Hkv, dim=1)
        v = v.repeat_interleave(H // Hkv, dim=1)

        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d)
        future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
        scores = scores.masked_fill(future, float("-inf"))
        scores = scores - scores.amax(dim=-1, keepdim=True)
        p = scores.exp()
        p = p / p.sum(dim=-1, keepdim=True)

        attn = torch.matmul(p, v).permute(0, 2, 1, 3).reshape(B, T, D)
        h = x + self.W_o(attn)
        return h + self.ffn(self.ffn_norm(h))
