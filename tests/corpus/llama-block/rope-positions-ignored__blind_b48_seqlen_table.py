import math

import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.to(torch.promote_types(x.dtype, torch.float32))
        ms = (h * h).mean(dim=-1, keepdim=True)
        return (h / torch.sqrt(ms + self.eps)).to(x.dtype) * self.weight


class SwiGLU(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)  # gate
        self.w3 = nn.Linear(dim, hidden, bias=False)  # up
        self.w2 = nn.Linear(hidden, dim, bias=False)  # down

    def forward(self, x):
        gate = self.w1(x)
        return self.w2(gate * torch.sigmoid(gate) * self.w3(x))


class Rotary(nn.Module):
    def __init__(self, head_dim, base):
        super().__init__()
        self.head_dim = head_dim
        self.base = base

    def forward(self, seq_len, device):
        """cos, sin (seq_len, head_dim/2) for positions 0 .. seq_len - 1."""
        inv_freq = self.base ** (-torch.arange(0, self.head_dim, 2, device=device, dtype=torch.float32) / self.head_dim)
        t = torch.arange(seq_len, device=device, dtype=torch.float32)
        freqs = torch.outer(t, inv_freq)
        return freqs.cos(), freqs.sin()


def rotate(x, cos, sin):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    cos, sin = cos.to(x.dtype), sin.to(x.dtype)
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, d_ff: int,
                 rope_base: float = 10000.0, eps: float = 1e-6):
        super().__init__()
        self.n_heads = num_heads
        self.n_kv = num_kv_heads
        self.hd = d_model // num_heads
        self.attn_norm = RMSNorm(d_model, eps)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.hd, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.hd, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)
        self.ffn = SwiGLU(d_model, d_ff)
        self.rotary = Rotary(self.hd, rope_base)

    def attend(self, x, positions):
        B, T, D = x.shape
        rep = self.n_heads // self.n_kv
        q = self.W_q(x).view(B, T, self.n_heads, self.hd).transpose(1, 2)
        k = self.W_k(x).view(B, T, self.n_kv, self.hd).transpose(1, 2)
        v = self.W_v(x).view(B, T, self.n_kv, self.hd).transpose(1, 2)
        cos, sin = self.rotary(T, x.device)  # MISTAKE: angles for 0 .. T-1, the given positions are never used
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        # expand kv heads: (B, n_kv, T, hd) -> (B, n_kv, rep, T, hd) -> (B, H, T, hd)
        k = k[:, :, None].expand(B, self.n_kv, rep, T, self.hd).reshape(B, self.n_heads, T, self.hd)
        v = v[:, :, None].expand(B, self.n_kv, rep, T, self.hd).reshape(B, self.n_heads, T, self.hd)
        s = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(self.hd)
        future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
        s = s.masked_fill(future, float("-inf"))
        p = torch.softmax(s, dim=-1)
        o = torch.einsum("bhij,bhjd->bhid", p, v)
        return self.W_o(o.transpose(1, 2).reshape(B, T, D))

    def forward(self, x, positions=None):
        if positions is None:
            positions = torch.arange(x.size(1), device=x.device)
        h = x + self.attend(self.attn_norm(x), positions)
        out = h + self.ffn(self.ffn_norm(h))
        return out
