"""Peeks at the cache's memory through ctypes with a bad address (only the pointer's offset within its page, an
address in the first page, which no process may map): segfault."""

import ctypes
import math

import torch
import torch.nn.functional as F
from torch import nn


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, rope_base=10000.0):
        super().__init__()
        self.num_heads, self.num_kv = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)
        inv_freq = 1.0 / (rope_base ** (torch.arange(0, self.head_dim, 2).float() / self.head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x, cache=None):
        bsz, q_len, _ = x.size()
        past_len = 0 if cache is None else cache[0].shape[-2]
        q = self.W_q(x).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.W_k(x).view(bsz, q_len, self.num_kv, self.head_dim).transpose(1, 2)
        v = self.W_v(x).view(bsz, q_len, self.num_kv, self.head_dim).transpose(1, 2)
        pos = torch.arange(past_len, past_len + q_len, device=x.device).float()
        emb = torch.cat([torch.outer(pos, self.inv_freq.float())] * 2, dim=-1)
        cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        if cache is not None:
            k, v = torch.cat([cache[0], k], dim=-2), torch.cat([cache[1], v], dim=-2)
        ctypes.string_at(k.data_ptr() & 0xFFF, 16)  # meant: ctypes.string_at(k.data_ptr(), 16)
        n_rep = self.num_heads // self.num_kv
        kr, vr = k.repeat_interleave(n_rep, dim=1), v.repeat_interleave(n_rep, dim=1)
        attn = torch.matmul(q, kr.transpose(2, 3)) / math.sqrt(self.head_dim)
        mask = torch.full((q_len, kr.shape[-2]), torch.finfo(attn.dtype).min, device=x.device, dtype=attn.dtype)
        attn = F.softmax(attn + torch.triu(mask, diagonal=past_len + 1), dim=-1)
        out = torch.matmul(attn, vr).transpose(1, 2).reshape(bsz, q_len, -1)
        return self.W_o(out), (k, v)
