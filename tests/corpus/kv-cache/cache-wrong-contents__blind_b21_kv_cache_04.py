"""Exercise kv-cache: LLaMA-style attention with grouped kv heads, RoPE and a KV cache.

This version keeps raw keys in its cache and rotates every key at its absolute position each step.
"""

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

    def rotate(self, t, positions):
        d = t.shape[-1]
        wide = torch.promote_types(t.dtype, torch.float32)
        inv_freq = 1.0 / self.rope_base ** (torch.arange(0, d, 2, device=t.device, dtype=wide) / d)
        theta = positions.to(wide)[:, None] * inv_freq
        cos, sin = theta.cos().to(t.dtype), theta.sin().to(t.dtype)
        t1, t2 = t[..., : d // 2], t[..., d // 2 :]
        return torch.cat([t1 * cos - t2 * sin, t2 * cos + t1 * sin], dim=-1)

    def forward(self, x, cache=None):
        B, T, D = x.shape
        H, Hkv, hd = self.num_heads, self.num_kv_heads, self.head_dim
        q = self.W_q(x).view(B, T, H, hd).transpose(1, 2)
        k_new = self.W_k(x).view(B, T, Hkv, hd).transpose(1, 2)
        v_new = self.W_v(x).view(B, T, Hkv, hd).transpose(1, 2)
        if cache is None:
            k_all, v_all = k_new, v_new
        else:
            k_all = torch.cat([cache[0], k_new], dim=2)
            v_all = torch.cat([cache[1], v_new], dim=2)
        present = (k_all, v_all)  # MISTAKE
        Tk = k_all.size(2)
        past = Tk - T
        all_pos = torch.arange(Tk, device=x.device)
        q = self.rotate(q, all_pos[past:])
        k = self.rotate(k_all, all_pos)  # rotate every key at its own position
        rep = H // Hkv
        k = k.repeat_interleave(rep, dim=1)
        v = v_all.repeat_interleave(rep, dim=1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(hd)
        visible = all_pos[None, :] <= all_pos[past:, None]
        scores = scores.masked_fill(~visible, float("-inf"))
        w = torch.softmax(scores, dim=-1)
        y = (w @ v).transpose(1, 2).reshape(B, T, D)
        return self.W_o(y), present
