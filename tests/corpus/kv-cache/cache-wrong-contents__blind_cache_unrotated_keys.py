"""Caches the keys before RoPE and re-rotates the whole cache at 0..Tk-1 each call: outputs agree, the returned cache does not.
"""
import math

import torch
from torch import nn


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rope(x, pos, base):
    d = x.shape[-1]
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, device=x.device, dtype=torch.float32) / d))
    freqs = pos.float()[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return x * emb.cos().to(x.dtype) + rotate_half(x) * emb.sin().to(x.dtype)


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0):
        super().__init__()
        self.n_heads, self.n_kv = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        self.base = rope_base
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, D = x.shape
        hd = self.head_dim
        q = self.W_q(x).view(B, T, self.n_heads, hd).transpose(1, 2)
        k = self.W_k(x).view(B, T, self.n_kv, hd).transpose(1, 2)
        v = self.W_v(x).view(B, T, self.n_kv, hd).transpose(1, 2)
        past = 0 if cache is None else cache[0].shape[2]
        pos = torch.arange(past, past + T, device=x.device)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        q = rope(q, pos, self.base)
        k_rot = rope(k, torch.arange(k.shape[2], device=x.device), self.base)
        n_rep = self.n_heads // self.n_kv
        kk, vv = k_rot.repeat_interleave(n_rep, dim=1), v.repeat_interleave(n_rep, dim=1)
        Tk = kk.shape[2]
        scores = q @ kk.transpose(-2, -1) / math.sqrt(hd)
        causal = torch.ones(T, Tk, dtype=torch.bool, device=x.device).tril(diagonal=Tk - T)
        scores = scores.masked_fill(~causal, float("-inf"))
        out = scores.softmax(dim=-1) @ vv
        out = out.transpose(1, 2).reshape(B, T, D)
        return self.W_o(out), (k, v)
