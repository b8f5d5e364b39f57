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
        ms = x.pow(2).mean(dim=-1, keepdim=True)
        return x / (torch.sqrt(ms) + self.eps) * self.weight  # MISTAKE


class SwiGLU(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        gate = F.silu(self.w1(x))
        up = self.w3(x)
        return self.w2(gate * up)


def precompute_angles(positions, dim, theta, dtype):
    freqs = theta ** (-torch.arange(0, dim, 2, device=positions.device, dtype=dtype) / dim)
    return positions.to(dtype).unsqueeze(-1) * freqs


def apply_rotary(x, angles):
    # x: (B, H, T, hd); angles: (T, hd/2) or (B, T, hd/2)
    if angles.dim() == 3:
        angles = angles.unsqueeze(1)
    c, s = angles.cos(), angles.sin()
    half = x.shape[-1] // 2
    a, b = x[..., :half], x[..., half:]
    return torch.cat([a * c - b * s, b * c + a * s], dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, d_ff: int,
                 rope_base: float = 10000.0, eps: float = 1e-6):
        super().__init__()
        self.n_heads = num_heads
        self.n_kv_heads = num_kv_heads
        self.n_rep = num_heads // num_kv_heads
        self.head_dim = d_model // num_heads
        self.rope_theta = rope_base
        self.W_q = nn.Linear(d_model, num_heads * self.head_dim, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_o = nn.Linear(num_heads * self.head_dim, d_model, bias=False)
        self.ffn = SwiGLU(d_model, d_ff)
        self.attn_norm = RMSNorm(d_model, eps=eps)
        self.ffn_norm = RMSNorm(d_model, eps=eps)

    def attention(self, x, positions):
        bsz, seqlen, _ = x.shape
        xq = self.W_q(x).view(bsz, seqlen, self.n_heads, self.head_dim).permute(0, 2, 1, 3)
        xk = self.W_k(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim).permute(0, 2, 1, 3)
        xv = self.W_v(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim).permute(0, 2, 1, 3)

        angle_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
        angles = precompute_angles(positions, self.head_dim, self.rope_theta, angle_dtype)
        xq = apply_rotary(xq, angles).to(x.dtype)
        xk = apply_rotary(xk, angles).to(x.dtype)

        xk = torch.repeat_interleave(xk, self.n_rep, dim=1)
        xv = torch.repeat_interleave(xv, self.n_rep, dim=1)

        scores = torch.matmul(xq, xk.transpose(2, 3)) / math.sqrt(self.head_dim)
        future = torch.triu(torch.ones(seqlen, seqlen, dtype=torch.bool, device=x.device), diagonal=1)
        scores = scores.masked_fill(future, float("-inf"))
        scores = F.softmax(scores, dim=-1)
        output = torch.matmul(scores, xv)
        output = output.permute(0, 2, 1, 3).contiguous().view(bsz, seqlen, -1)
        return self.W_o(output)

    def forward(self, x, positions=None):
        if positions is None:
            positions = torch.arange(x.shape[1], device=x.device)
        h = x + self.attention(self.attn_norm(x), positions)
        out = h + self.ffn(self.ffn_norm(h))
        return out
