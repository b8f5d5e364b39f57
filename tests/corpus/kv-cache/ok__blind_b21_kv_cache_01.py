"""Exercise kv-cache: LLaMA-style attention with grouped kv heads, RoPE and a KV cache."""

import math

import torch
from torch import nn


def rope(x, pos, base):
    """x (B, h, T, d), pos (T,): half-split rotation."""
    d = x.size(-1)
    wide = torch.promote_types(x.dtype, torch.float32)
    inv_freq = base ** (-torch.arange(0, d, 2, device=x.device, dtype=wide) / d)
    theta = torch.outer(pos.to(wide), inv_freq)  # (T, d/2)
    c = torch.cat([theta.cos(), theta.cos()], dim=-1).to(x.dtype)
    s = torch.cat([theta.sin(), theta.sin()], dim=-1).to(x.dtype)
    x1, x2 = x.chunk(2, dim=-1)
    return x * c + torch.cat([-x2, x1], dim=-1) * s


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0):
        super().__init__()
        self.H, self.Hkv = num_heads, num_kv_heads
        self.hd = d_model // num_heads
        self.base = rope_base
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.hd, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.hd, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, D = x.shape
        H, Hkv, hd = self.H, self.Hkv, self.hd
        g = H // Hkv
        past = 0 if cache is None else cache[0].shape[-2]
        pos = torch.arange(past, past + T, device=x.device)

        q = rope(self.W_q(x).view(B, T, H, hd).transpose(1, 2), pos, self.base)
        k = rope(self.W_k(x).view(B, T, Hkv, hd).transpose(1, 2), pos, self.base)
        v = self.W_v(x).view(B, T, Hkv, hd).transpose(1, 2)
        if cache is not None:
            k = torch.cat((cache[0], k), dim=-2)
            v = torch.cat((cache[1], v), dim=-2)
        Tk = k.shape[-2]

        qg = q.reshape(B, Hkv, g, T, hd)  # query head h -> kv head h // g
        s = torch.einsum("bngtd,bnsd->bngts", qg, k) / math.sqrt(hd)
        key_pos = torch.arange(Tk, device=x.device)
        s = s.masked_fill(key_pos[None, :] > pos[:, None], float("-inf"))  # bottom-right causal
        p = torch.softmax(s, dim=-1)
        y = torch.einsum("bngts,bnsd->btngd", p, v).reshape(B, T, D)
        return self.W_o(y), (k, v)
