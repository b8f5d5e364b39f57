"""Correct: RoPE as a complex multiply on (x_i + i x_{i+d/2}), kv heads expanded with index_select on
h // group, a causal mask built from absolute positions and -1e4 (safe in float16)."""

import math

import torch
from torch import nn


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, rope_base=10000.0):
        super().__init__()
        self.nh, self.nkv = num_heads, num_kv_heads
        self.dh = d_model // num_heads
        self.base = float(rope_base)
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, self.nkv * self.dh, bias=False)
        self.W_v = nn.Linear(d_model, self.nkv * self.dh, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def rope(self, t, positions):
        half = self.dh // 2
        freq = self.base ** (-torch.arange(half, device=t.device, dtype=torch.float32) * 2 / self.dh)
        rot = torch.polar(torch.ones(len(positions), half, device=t.device), positions.float()[:, None] * freq)
        z = torch.complex(t[..., :half].float(), t[..., half:].float()) * rot
        return torch.cat([z.real, z.imag], dim=-1).to(t.dtype)

    def forward(self, x, cache=None):
        b, n, d_model = x.shape
        n_past = 0 if cache is None else cache[0].shape[2]
        positions = torch.arange(n, device=x.device) + n_past
        q = self.rope(self.W_q(x).reshape(b, n, self.nh, self.dh).permute(0, 2, 1, 3), positions)
        k = self.rope(self.W_k(x).reshape(b, n, self.nkv, self.dh).permute(0, 2, 1, 3), positions)
        v = self.W_v(x).reshape(b, n, self.nkv, self.dh).permute(0, 2, 1, 3)
        if cache is not None:
            k = torch.cat([cache[0], k], 2)
            v = torch.cat([cache[1], v], 2)
        idx = torch.arange(self.nh, device=x.device) // (self.nh // self.nkv)
        kh, vh = k.index_select(1, idx), v.index_select(1, idx)
        scores = torch.matmul(q, kh.transpose(-1, -2)) / math.sqrt(self.dh)
        key_pos = torch.arange(n_past + n, device=x.device)
        future = key_pos[None, :] > positions[:, None]
        scores = scores.masked_fill(future, -1e4)
        w = torch.softmax(scores.float(), dim=-1).to(v.dtype)
        out = (w @ vh).permute(0, 2, 1, 3).reshape(b, n, d_model)
        return self.W_o(out), (k, v)
