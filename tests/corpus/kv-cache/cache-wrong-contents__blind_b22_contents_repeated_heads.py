"""kv-cache: kv heads expanded to H right after RoPE, attention by einsum."""

import math

import torch
from torch import nn


def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    h = d // 2
    wt = torch.promote_types(x.dtype, torch.float32)
    theta = positions.to(wt)[:, None] * base ** (-2.0 * torch.arange(h, device=x.device, dtype=wt) / d)
    c, s = theta.cos().to(x.dtype), theta.sin().to(x.dtype)
    return torch.cat((x[..., :h] * c - x[..., h:] * s, x[..., h:] * c + x[..., :h] * s), -1)


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0):
        super().__init__()
        self.nh, self.nkv = num_heads, num_kv_heads
        self.dh = d_model // num_heads
        self.rope_base = rope_base
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.dh, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.dh, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, D = x.shape
        H, Hkv, d = self.nh, self.nkv, self.dh
        g = H // Hkv
        t0 = 0 if cache is None else cache[0].shape[-2]
        pos = torch.arange(t0, t0 + T, device=x.device)

        q = apply_rope(self.W_q(x).view(B, T, H, d).transpose(1, 2), pos, self.rope_base)
        k = apply_rope(self.W_k(x).view(B, T, Hkv, d).transpose(1, 2), pos, self.rope_base)
        v = self.W_v(x).view(B, T, Hkv, d).transpose(1, 2)
        # share each kv head with its group of query heads
        k = k[:, :, None].expand(B, Hkv, g, T, d).reshape(B, H, T, d)  # MISTAKE
        v = v[:, :, None].expand(B, Hkv, g, T, d).reshape(B, H, T, d)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        S = k.shape[2]

        s = torch.einsum("bhtd,bhsd->bhts", q, k) / math.sqrt(d)
        ok = torch.arange(S, device=x.device)[None, :] <= (torch.arange(T, device=x.device)[:, None] + S - T)
        s = s.masked_fill(~ok, float("-inf"))
        p = s.softmax(-1)
        o = torch.einsum("bhts,bhsd->bthd", p, v).reshape(B, T, D)
        return self.W_o(o), (k, v)
