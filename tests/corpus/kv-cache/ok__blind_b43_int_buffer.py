"""Cached LLaMA-style attention whose RoPE pair indices live in a registered (integer) buffer that follows module.to(device), with positions and the causal mask made with device=x.device."""
import math

import torch
import torch.nn as nn


class CachedSelfAttention(nn.Module):
    """Causal self-attention with grouped kv heads, RoPE and a KV cache (LLaMA-style)."""

    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0):
        super().__init__()
        assert d_model % num_heads == 0 and num_heads % num_kv_heads == 0
        self.d_model = d_model
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.d_head = d_model // num_heads
        self.rope_base = rope_base
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d_head, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d_head, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)
        # integer buffer: moves with .to(device), untouched by .to(dtype)
        self.register_buffer("pair_index", torch.arange(self.d_head // 2), persistent=False)

    def _rope(self, x, pos):
        d = x.shape[-1]
        half = d // 2
        ft = torch.promote_types(x.dtype, torch.float32)
        inv_freq = self.rope_base ** (-2.0 * self.pair_index.to(ft) / d)
        theta = pos.to(ft)[:, None] * inv_freq[None, :]  # (T, half)
        cos = theta.cos().to(x.dtype)
        sin = theta.sin().to(x.dtype)
        x1, x2 = x[..., :half], x[..., half:]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H, Hkv, d = self.num_heads, self.num_kv_heads, self.d_head
        q = self.W_q(x).view(B, T, H, d).transpose(1, 2)
        k = self.W_k(x).view(B, T, Hkv, d).transpose(1, 2)
        v = self.W_v(x).view(B, T, Hkv, d).transpose(1, 2)
        past = 0 if cache is None else cache[0].shape[2]
        pos = torch.arange(past, past + T, device=x.device)
        q = self._rope(q, pos)
        k = self._rope(k, pos)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        Tk = k.shape[2]
        rep = H // Hkv
        kr = k.repeat_interleave(rep, dim=1)
        vr = v.repeat_interleave(rep, dim=1)
        scores = q @ kr.transpose(-2, -1) / math.sqrt(d)
        allowed = torch.ones(T, Tk, dtype=torch.bool, device=x.device).tril(diagonal=Tk - T)
        scores = scores.masked_fill(~allowed, float("-inf"))
        w = torch.softmax(scores, dim=-1)
        out = (w @ vr).transpose(1, 2).reshape(B, T, self.d_model)
        return self.W_o(out), (k, v)
