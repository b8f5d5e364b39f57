"""Cached LLaMA-style attention whose positions, cos/sin and causal mask are computed on the CPU and then moved with .to(x) / .to(x.device) before use."""
import math

import torch
import torch.nn as nn


def _cos_sin(positions_cpu, d, base):
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
    theta = positions_cpu.to(torch.float32).unsqueeze(-1) * inv_freq  # (T, d/2)
    return theta.cos(), theta.sin()


def _rotate(x, cos, sin):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class CachedSelfAttention(nn.Module):
    """Causal self-attention with grouped kv heads, RoPE and a KV cache (LLaMA-style)."""

    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0):
        super().__init__()
        self.d_model = d_model
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.d = d_model // num_heads
        self.rope_base = rope_base
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, cache=None):
        B, Tn, _ = x.shape
        q = self.W_q(x).view(B, Tn, self.num_heads, self.d).transpose(1, 2)
        k = self.W_k(x).view(B, Tn, self.num_kv_heads, self.d).transpose(1, 2)
        v = self.W_v(x).view(B, Tn, self.num_kv_heads, self.d).transpose(1, 2)
        Tp = 0 if cache is None else cache[0].shape[2]
        positions = torch.arange(Tp, Tp + Tn)  # CPU
        cos, sin = _cos_sin(positions, self.d, self.rope_base)
        cos, sin = cos.to(x), sin.to(x)  # device and dtype of x
        q = _rotate(q, cos, sin)
        k = _rotate(k, cos, sin)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        Tk = Tp + Tn
        rep = self.num_heads // self.num_kv_heads
        kr = k.repeat_interleave(rep, dim=1)
        vr = v.repeat_interleave(rep, dim=1)
        scores = q @ kr.transpose(-2, -1) / math.sqrt(self.d)
        allowed = torch.ones(Tn, Tk, dtype=torch.bool).tril(diagonal=Tp).to(x.device)
        scores = scores.masked_fill(~allowed, float("-inf"))
        w = torch.softmax(scores, dim=-1)
        out = (w @ vr).transpose(1, 2).reshape(B, Tn, self.d_model)
        return self.W_o(out), (k, v)
