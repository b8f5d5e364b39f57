"""Future keys get a score of -1 through torch.where instead of -inf, so the causal mask only nudges them and they keep weight."""

import math

import torch
from torch import nn


def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    h = d // 2
    cdt = torch.promote_types(x.dtype, torch.float32)
    freq = torch.pow(base, -torch.arange(h, device=x.device, dtype=cdt) / h)
    theta = positions.to(cdt).unsqueeze(-1) * freq
    c = theta.cos().to(x.dtype)
    s = theta.sin().to(x.dtype)
    lo, hi = x[..., :h], x[..., h:]
    return torch.cat((lo * c - hi * s, hi * c + lo * s), dim=-1)


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0):
        super().__init__()
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.d = d_model // num_heads
        self.rope_base = rope_base
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, D = x.shape
        H, Hkv, d = self.num_heads, self.num_kv_heads, self.d
        T_past = 0 if cache is None else cache[0].shape[2]
        positions = torch.arange(T_past, T_past + T, device=x.device)

        q = apply_rope(self.W_q(x).view(B, T, H, d).transpose(1, 2), positions, self.rope_base)
        k = apply_rope(self.W_k(x).view(B, T, Hkv, d).transpose(1, 2), positions, self.rope_base)
        v = self.W_v(x).view(B, T, Hkv, d).transpose(1, 2)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        Tk = k.shape[2]

        # flatten (B, H) for bmm; query head h uses kv head h // (H // Hkv)
        g = H // Hkv
        kx = k[:, :, None].expand(B, Hkv, g, Tk, d).reshape(B * H, Tk, d)
        vx = v[:, :, None].expand(B, Hkv, g, Tk, d).reshape(B * H, Tk, d)
        qx = q.reshape(B * H, T, d)
        scores = torch.bmm(qx, kx.transpose(1, 2)) / math.sqrt(d)
        ok = torch.arange(Tk, device=x.device)[None, :] <= torch.arange(T, device=x.device)[:, None] + T_past
        scores = torch.where(ok, scores, torch.full_like(scores, -1.0))
        p = torch.softmax(scores, dim=-1)
        out = torch.bmm(p, vx).view(B, H, T, d).transpose(1, 2).reshape(B, T, D)
        return self.W_o(out), (k, v)
