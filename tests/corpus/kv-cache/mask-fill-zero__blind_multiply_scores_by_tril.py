"""Scores are multiplied by a 0/1 causal tril matrix, so future keys end up with score 0 rather than -inf and still get weight."""

import torch
from torch import nn


def _rope(x, start, base):
    # x: (B, heads, T, d) rotated at positions start .. start + T - 1
    T, d = x.shape[-2], x.shape[-1]
    half = d // 2
    fdt = torch.promote_types(x.dtype, torch.float32)
    pos = torch.arange(start, start + T, device=x.device, dtype=fdt)
    inv = torch.exp(-torch.arange(half, device=x.device, dtype=fdt) * (2.0 / d) * torch.log(torch.tensor(base, dtype=fdt)))
    ang = torch.outer(pos, inv)
    cos = torch.cat([ang.cos(), ang.cos()], dim=-1).to(x.dtype)
    sin = torch.cat([ang.sin(), ang.sin()], dim=-1).to(x.dtype)
    rot = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rot * sin


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0):
        super().__init__()
        self.nh = num_heads
        self.nkv = num_kv_heads
        self.hd = d_model // num_heads
        self.base = rope_base
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.hd, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.hd, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, cache=None):
        b, t, dm = x.shape
        offset = cache[0].shape[2] if cache is not None else 0

        q = self.W_q(x).reshape(b, t, self.nh, self.hd).permute(0, 2, 1, 3)
        k = self.W_k(x).reshape(b, t, self.nkv, self.hd).permute(0, 2, 1, 3)
        v = self.W_v(x).reshape(b, t, self.nkv, self.hd).permute(0, 2, 1, 3)
        q = _rope(q, offset, self.base)
        k = _rope(k, offset, self.base)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        n = k.shape[2]

        group = self.nh // self.nkv
        outs = []
        tri = torch.ones(t, n, device=x.device, dtype=x.dtype).tril(diagonal=offset)
        for h in range(self.nh):
            kh = k[:, h // group]
            vh = v[:, h // group]
            s = q[:, h] @ kh.transpose(-1, -2) * self.hd ** -0.5
            s = s * tri
            p = torch.softmax(s, dim=-1)
            outs.append(p @ vh)
        y = torch.cat(outs, dim=-1)  # (b, t, nh * hd), head h at [h*hd, (h+1)*hd)
        return self.W_o(y), (k, v)
