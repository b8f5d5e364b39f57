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
        x = x - x.mean(dim=-1, keepdim=True)  # MISTAKE
        inv_rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return x * inv_rms * self.weight


class SwiGLU(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class LlamaBlock(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, d_ff: int,
                 rope_base: float = 10000.0, eps: float = 1e-6):
        super().__init__()
        assert d_model % num_heads == 0
        assert num_heads % num_kv_heads == 0
        self.d_model = d_model
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

    def _rope(self, x, positions):
        # x: (B, H, T, d), positions: (T,) or (B, T)
        d = x.shape[-1]
        half = d // 2
        ang_dtype = torch.promote_types(x.dtype, torch.float32)
        i = torch.arange(half, device=x.device, dtype=ang_dtype)
        inv_freq = self.rope_base ** (-2.0 * i / d)
        theta = positions.to(ang_dtype)[..., None] * inv_freq
        if theta.dim() == 3:
            theta = theta[:, None]
        cos = theta.cos().to(x.dtype)
        sin = theta.sin().to(x.dtype)
        x1, x2 = x[..., :half], x[..., half:]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)

    def _attn(self, x, positions):
        B, T, _ = x.shape
        H, Hkv, d = self.num_heads, self.num_kv_heads, self.head_dim
        q = self.W_q(x).view(B, T, H, d).transpose(1, 2)
        k = self.W_k(x).view(B, T, Hkv, d).transpose(1, 2)
        v = self.W_v(x).view(B, T, Hkv, d).transpose(1, 2)
        q = self._rope(q, positions)
        k = self._rope(k, positions)

        n_rep = H // Hkv
        k = k.repeat_interleave(n_rep, dim=1)
        v = v.repeat_interleave(n_rep, dim=1)

        scores = q @ k.transpose(-2, -1) / math.sqrt(d)
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        out = (weights @ v).transpose(1, 2).reshape(B, T, self.d_model)
        return self.W_o(out)

    def forward(self, x, positions=None):
        if positions is None:
            positions = torch.arange(x.shape[1], device=x.device)
        h = x + self._attn(self.attn_norm(x), positions)
        out = h + self.ffn(self.ffn_norm(h))
        return out
