import math

import torch
from torch import nn


def rope_rotate(x, pos, base):
    """x (B, G, T, d); pos (T,) absolute positions. Half-split pairs (i, i + d/2)."""
    d = x.shape[-1]
    half = d // 2
    ftype = torch.promote_types(x.dtype, torch.float32)
    freqs = torch.exp(-math.log(base) * torch.arange(half, device=x.device, dtype=ftype) * 2.0 / d)
    ang = pos.to(ftype)[:, None] * freqs[None, :]
    c, s = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    lo, hi = x[..., :half], x[..., half:]
    return torch.cat((lo * c - hi * s, hi * c + lo * s), dim=-1)


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0):
        super().__init__()
        self.H = num_heads
        self.G = num_kv_heads
        self.d = d_model // num_heads
        self.base = rope_base
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, D = x.shape
        G, d = self.G, self.d
        n = self.H // G  # query heads per kv head
        t0 = 0 if cache is None else cache[0].shape[2]
        pos = torch.arange(t0, t0 + T, device=x.device)

        # query head h = g * n + i reads kv head g
        q = self.W_q(x).view(B, T, G, n, d).permute(0, 2, 3, 1, 4)  # (B, G, n, T, d)
        k = self.W_k(x).view(B, T, G, d).transpose(1, 2)  # (B, G, T, d)
        v = self.W_v(x).view(B, T, G, d).transpose(1, 2)
        q = rope_rotate(q, pos, self.base)
        k = rope_rotate(k, pos, self.base)
        if cache is not None:
            k = torch.cat((cache[0], k), dim=2)
            v = torch.cat((cache[1], v), dim=2)
        S = k.shape[2]

        logits = torch.einsum("bgntd,bgsd->bgnts", q, k) / math.sqrt(d)
        q_at = torch.arange(T, device=x.device)[:, None] + t0
        k_at = torch.arange(S, device=x.device)[None, :]
        logits = logits.masked_fill(k_at > q_at, float("-inf"))
        w = torch.exp(logits - logits.amax(dim=-1, keepdim=True))
        w = w / w.sum(dim=-1, keepdim=True)
        y = torch.einsum("bgnts,bgsd->btgnd", w, v).reshape(B, T, D)
        return self.W_o(y), (k, v)
