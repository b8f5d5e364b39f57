"""LLaMA block whose RoPE exponents live in a registered (int64) buffer that follows module.to(), whose default positions use device=x.device, and whose causal mask is built on the CPU and moved with .to(x.device)."""
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
        xf = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
        y = xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return y.to(x.dtype) * self.weight


class SwiGLU(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class LlamaBlock(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, d_ff: int,
                 rope_base: float = 10000.0, eps: float = 1e-6):
        super().__init__()
        self.d_model = d_model
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.d = d_model // num_heads
        self.rope_base = rope_base
        self.attn_norm = RMSNorm(d_model, eps)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)
        self.ffn = SwiGLU(d_model, d_ff)
        # integer buffer: follows .to(device) but is never cast to a half dtype
        self.register_buffer("rope_exps", torch.arange(0, self.d, 2, dtype=torch.int64), persistent=False)

    def _rope(self, x, positions):
        inv_freq = 1.0 / (self.rope_base ** (self.rope_exps.to(torch.float32) / self.d))
        theta = positions.to(torch.float32).unsqueeze(-1) * inv_freq
        if theta.dim() == 3:
            theta = theta.unsqueeze(1)
        cos, sin = theta.cos().to(x.dtype), theta.sin().to(x.dtype)
        half = self.d // 2
        x1, x2 = x[..., :half], x[..., half:]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)

    def _attn(self, x, positions):
        B, T, _ = x.shape
        q = self.W_q(x).view(B, T, self.num_heads, self.d).transpose(1, 2)
        k = self.W_k(x).view(B, T, self.num_kv_heads, self.d).transpose(1, 2)
        v = self.W_v(x).view(B, T, self.num_kv_heads, self.d).transpose(1, 2)
        q = self._rope(q, positions)
        k = self._rope(k, positions)
        rep = self.num_heads // self.num_kv_heads
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d)
        causal = torch.tril(torch.ones(T, T)).bool().to(x.device)
        scores = scores.masked_fill(~causal, float("-inf"))
        w = torch.softmax(scores, dim=-1)
        out = (w @ v).transpose(1, 2).reshape(B, T, self.d_model)
        return self.W_o(out)

    def forward(self, x, positions=None):
        if positions is None:
            positions = torch.arange(x.shape[1], device=x.device)
        h = x + self._attn(self.attn_norm(x), positions)
        return h + self.ffn(self.ffn_norm(h))
