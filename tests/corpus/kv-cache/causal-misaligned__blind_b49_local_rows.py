import math

import torch
from torch import nn


def _rope(t, pos, base):
    # t: (B, heads, T, hd); pos: (T,) absolute positions
    hd = t.shape[-1]
    half = hd // 2
    f_dtype = torch.promote_types(t.dtype, torch.float32)
    inv = base ** (-torch.arange(half, device=t.device, dtype=f_dtype) * 2 / hd)
    ang = pos.to(f_dtype)[:, None] * inv[None, :]
    c, s = ang.cos().to(t.dtype), ang.sin().to(t.dtype)
    a, b = t[..., :half], t[..., half:]
    return torch.cat((a * c - b * s, b * c + a * s), dim=-1)


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0):
        super().__init__()
        self.nq, self.nkv = num_heads, num_kv_heads
        self.hd = d_model // num_heads
        self.base = rope_base
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.hd, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.hd, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, cache=None):
        B, n_new, _ = x.shape
        past = cache[0].shape[2] if cache is not None else 0

        q = self.W_q(x).reshape(B, n_new, self.nq, self.hd).permute(0, 2, 1, 3)
        k = self.W_k(x).reshape(B, n_new, self.nkv, self.hd).permute(0, 2, 1, 3)
        v = self.W_v(x).reshape(B, n_new, self.nkv, self.hd).permute(0, 2, 1, 3)

        pos = torch.arange(past, past + n_new, device=x.device)
        q, k = _rope(q, pos, self.base), _rope(k, pos, self.base)

        if cache is not None:
            k = torch.cat((cache[0], k), dim=2)
            v = torch.cat((cache[1], v), dim=2)
        n_all = k.shape[2]

        group = self.nq // self.nkv
        kk = k.repeat_interleave(group, dim=1)
        vv = v.repeat_interleave(group, dim=1)

        att = (q @ kk.transpose(-1, -2)) * self.hd ** -0.5  # (B, nq, n_new, n_all)
        rows = torch.arange(n_new, device=x.device)[:, None]  # MISTAKE: row index local to this call, not past + i
        cols = torch.arange(n_all, device=x.device)[None, :]
        att = att.masked_fill(cols > rows, float("-inf"))
        att = torch.softmax(att, dim=-1)
        out = (att @ vv).permute(0, 2, 1, 3).reshape(B, n_new, self.nq * self.hd)
        return self.W_o(out), (k, v)
