"""Exercise kv-cache: LLaMA-style attention with grouped kv heads, RoPE and a KV cache."""

import math

import torch
from torch import nn


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0):
        super().__init__()
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.rope_base = rope_base
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def _rope(self, t, pos):
        d = t.size(-1)
        wide = torch.promote_types(t.dtype, torch.float32)
        inv = 1.0 / self.rope_base ** (torch.arange(0, d, 2, device=t.device, dtype=wide) / d)
        ang = pos.to(wide)[:, None] * inv[None, :]
        cos, sin = ang.cos().to(t.dtype), ang.sin().to(t.dtype)
        a, b = t[..., : d // 2], t[..., d // 2 :]
        return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)

    def forward(self, x, cache=None):
        bsz, seq_len, d_model = x.shape
        H, Hkv, hd = self.num_heads, self.num_kv_heads, self.head_dim
        q = self.W_q(x).view(bsz, seq_len, H, hd).transpose(1, 2)
        k = self.W_k(x).view(bsz, seq_len, Hkv, hd).transpose(1, 2)
        v = self.W_v(x).view(bsz, seq_len, Hkv, hd).transpose(1, 2)

        pos = torch.arange(x.shape[1], device=x.device)  # MISTAKE
        q, k = self._rope(q, pos), self._rope(k, pos)

        past_len = 0
        if cache is not None:
            past_k, past_v = cache
            past_len = past_k.size(2)
            k = torch.cat([past_k, k], dim=2)
            v = torch.cat([past_v, v], dim=2)
        total = past_len + seq_len

        n_rep = H // Hkv
        k_rep = k.repeat_interleave(n_rep, dim=1)
        v_rep = v.repeat_interleave(n_rep, dim=1)
        scores = q @ k_rep.transpose(-2, -1) / math.sqrt(hd)
        causal = torch.ones(seq_len, total, dtype=torch.bool, device=x.device).tril(diagonal=past_len)
        scores = scores.masked_fill(~causal, float("-inf"))
        attn = torch.softmax(scores, dim=-1)
        out = (attn @ v_rep).transpose(1, 2).reshape(bsz, seq_len, d_model)
        return self.W_o(out), (k, v)
