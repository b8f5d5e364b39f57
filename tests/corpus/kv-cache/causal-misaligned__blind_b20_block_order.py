"""Cached GQA self-attention whose causal mask is assembled from two blocks: a T x T lower triangle for
the new tokens and an all-visible T x T_past block for the cached ones. Mistake: the blocks are
concatenated as [triangle | cached] while the keys are ordered [cached | new], so a chunk of several
new tokens after a non-empty cache has each query's visibility measured from the wrong origin (it sees
later new tokens and misses earlier cached ones). Prefill (no cache) and single-token decode are right."""

import math

import torch
from torch import nn


def apply_rope(x, positions, base):
    d = x.shape[-1]
    inv = base ** (-torch.arange(0, d, 2, device=x.device, dtype=torch.float64) / d)
    ang = positions.double()[:, None] * inv
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0):
        super().__init__()
        self.n_heads, self.n_kv = num_heads, num_kv_heads
        self.hd = d_model // num_heads
        self.base = rope_base
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.hd, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.hd, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, D = x.shape
        past = 0 if cache is None else cache[0].shape[2]
        pos = torch.arange(past, past + T, device=x.device)
        q = apply_rope(self.W_q(x).view(B, T, self.n_heads, self.hd).transpose(1, 2), pos, self.base)
        k = apply_rope(self.W_k(x).view(B, T, self.n_kv, self.hd).transpose(1, 2), pos, self.base)
        v = self.W_v(x).view(B, T, self.n_kv, self.hd).transpose(1, 2)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        rep = self.n_heads // self.n_kv
        k_r = k.repeat_interleave(rep, dim=1)
        v_r = v.repeat_interleave(rep, dim=1)
        scores = q @ k_r.transpose(-2, -1) / math.sqrt(self.hd)
        new_block = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
        old_block = torch.ones(T, past, dtype=torch.bool, device=x.device)
        allowed = torch.cat([new_block, old_block], dim=1)  # MISTAKE
        scores = scores.masked_fill(~allowed, float("-inf"))
        w = torch.softmax(scores, dim=-1)
        y = (w @ v_r).transpose(1, 2).reshape(B, T, D)
        return self.W_o(y), (k, v)
