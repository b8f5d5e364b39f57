import math

import torch
from torch import nn
from torch.nn import functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        denom = torch.sqrt(torch.mean(x * x, dim=-1, keepdim=True) + self.eps)
        return self.weight * (x / denom)


class SwiGLU(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


def rotary(x, pos, base):
    d = x.shape[-1]
    fdt = torch.float64 if x.dtype == torch.float64 else torch.float32
    inv_freq = torch.pow(torch.tensor(base, dtype=fdt, device=x.device),
                         -torch.arange(0, d, 2, dtype=fdt, device=x.device) / d)
    theta = torch.outer(pos.reshape(-1).to(fdt), inv_freq).reshape(*pos.shape, d // 2)
    if theta.ndim == 3:
        theta = theta.unsqueeze(1)
    cos, sin = torch.cos(theta).to(x.dtype), torch.sin(theta).to(x.dtype)
    x1, x2 = x[..., 0::2], x[..., 1::2]  # MISTAKE
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, d_ff: int,
                 rope_base: float = 10000.0, eps: float = 1e-6):
        super().__init__()
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.d = d_model // num_heads
        self.rope_base = rope_base
        self.attn_norm = RMSNorm(d_model, eps)
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.ffn = SwiGLU(d_model, d_ff)

    def self_attn(self, x, positions):
        B, T, D = x.shape
        H, G, d = self.num_heads, self.num_kv_heads, self.d
        q = self.W_q(x).unflatten(-1, (H, d)).transpose(1, 2)
        k = self.W_k(x).unflatten(-1, (G, d)).transpose(1, 2)
        v = self.W_v(x).unflatten(-1, (G, d)).transpose(1, 2)
        q = rotary(q, positions, self.rope_base)
        k = rotary(k, positions, self.rope_base)

        kv_of_head = torch.arange(H, device=x.device) // (H // G)
        k = k[:, kv_of_head]
        v = v[:, kv_of_head]

        s = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d)
        rows = torch.arange(T, device=x.device).view(T, 1)
        cols = torch.arange(T, device=x.device).view(1, T)
        s = torch.where(cols > rows, torch.tensor(float("-inf"), dtype=s.dtype, device=s.device), s)
        w = F.softmax(s, dim=-1)
        o = torch.matmul(w, v).transpose(1, 2).flatten(2)
        return self.W_o(o)

    def forward(self, x, positions=None):
        if positions is None:
            positions = torch.arange(x.size(1), device=x.device)
        x = x + self.self_attn(self.attn_norm(x), positions)
        x = x + self.ffn(self.ffn_norm(x))
        return x
